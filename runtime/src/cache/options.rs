//! [`Options`]: how the cache (`super::Cache`) scopes and trims what it watches
//! (controller-runtime's `cache.Options` and `cache.ByObject`).
//!
//! Defaults apply to every type; [`ByObject`] overrides them for one type, and
//! [`NamespaceConfig`] for one namespace (all namespaces mixed with specific ones
//! included). The informer (`super::informer`) runs one watch per resolved scope. The default
//! transform strips `metadata.managedFields`, which no controller reads and which is
//! often the largest part of an object.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use kube::core::ObjectMeta;

/// controller-runtime's default `SyncPeriod`: 10 hours (each informer adds ±10 % jitter).
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(10 * 60 * 60);

/// The per-handler event buffer (events, not bytes) before overflow coalescing starts.
pub const DEFAULT_HANDLER_BUFFER: usize = 1024;

/// The [`Options::namespace_config`] key for every namespace not named otherwise
/// (controller-runtime's `cache.AllNamespaces`, `metav1.NamespaceAll`).
pub const NAMESPACE_ALL: &str = "";

/// A transform run on every object's metadata before it is stored (any type).
pub type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// A transform for one type, run after the default one (controller-runtime's
/// `TransformFunc`).
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// The default transform: drop `metadata.managedFields`
/// (controller-runtime's `TransformStripManagedFields`).
pub fn strip_managed_fields() -> MetaTransform {
    STRIP.clone()
}

/// The one [`strip_managed_fields`] transform, so that an informer can tell it apart from
/// any other and skip `managedFields` while decoding (`super::unmanaged`).
static STRIP: std::sync::LazyLock<MetaTransform> =
    std::sync::LazyLock::new(|| Arc::new(|meta: &mut ObjectMeta| meta.managed_fields = None));

/// Whether `t` is [`strip_managed_fields`] (not merely a transform that does the same).
pub(crate) fn strips_managed_fields(t: &MetaTransform) -> bool {
    Arc::ptr_eq(t, &STRIP)
}

/// Per-type settings (controller-runtime's `cache.ByObject`). Unset fields fall back
/// to the [`Options`] defaults.
#[derive(Clone, Default)]
pub struct ByObject {
    /// Watch only these namespaces (`None`: the default namespaces). Ignored for
    /// cluster-scoped types.
    pub namespaces: Option<Vec<String>>,
    /// A label selector (`a=b,c!=d`) applied server-side.
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name=x`) applied server-side.
    pub field_selector: Option<String>,
    /// How often handlers get a resync Update (`None`: the default).
    pub sync_period: Option<Duration>,
    /// A transform for this type (a `Transform<K>`, type-erased).
    transform: Option<Arc<dyn Any + Send + Sync>>,
    /// Replaces the default (metadata) transform for this type when set.
    pub default_transform: Option<Option<MetaTransform>>,
    /// Sync this type through a streaming list (`None`: [`Options::streaming_lists`]).
    pub streaming_lists: Option<bool>,
}

impl fmt::Debug for ByObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByObject")
            .field("namespaces", &self.namespaces)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("sync_period", &self.sync_period)
            .field("transform", &self.transform.is_some())
            .field("streaming_lists", &self.streaming_lists)
            .finish()
    }
}

impl ByObject {
    /// Settings that change nothing (set fields with the builder methods).
    pub fn new() -> Self {
        Self::default()
    }

    /// Watch only these namespaces.
    pub fn namespaces<S: Into<String>>(mut self, ns: impl IntoIterator<Item = S>) -> Self {
        self.namespaces = Some(ns.into_iter().map(Into::into).collect());
        self
    }

    /// Filter by labels on the server (`a=b,c in (x,y)`).
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Filter by fields on the server (`metadata.name=x`).
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Resync this type at this period.
    pub fn sync_period(mut self, period: Duration) -> Self {
        self.sync_period = Some(period);
        self
    }

    /// Transforms every object of type `K` before it is stored.
    pub fn transform<K: Send + Sync + 'static>(
        mut self,
        f: impl Fn(&mut K) + Send + Sync + 'static,
    ) -> Self {
        let t: Transform<K> = Arc::new(f);
        self.transform = Some(Arc::new(t));
        self
    }

    /// Syncs this type through a streaming list, or not (see [`Options::streaming_lists`]).
    pub fn streaming_lists(mut self, on: bool) -> Self {
        self.streaming_lists = Some(on);
        self
    }

    /// Keeps `managedFields` (or runs another metadata transform) for this type.
    pub fn meta_transform(mut self, t: Option<MetaTransform>) -> Self {
        self.default_transform = Some(t);
        self
    }

    /// The typed transform, if one was set for `K`.
    pub(crate) fn transform_for<K: Send + Sync + 'static>(&self) -> Option<Transform<K>> {
        self.transform
            .as_ref()
            .and_then(|t| t.downcast_ref::<Transform<K>>().cloned())
    }
}

/// Settings for one namespace of [`Options::namespace_config`] (controller-runtime's
/// `cache.Config`, the values of `DefaultNamespaces`). Unset fields fall back to the
/// [`Options`] defaults.
#[derive(Clone, Default)]
pub struct NamespaceConfig {
    /// A label selector for this namespace's watches.
    pub label_selector: Option<String>,
    /// A field selector for this namespace's watches.
    pub field_selector: Option<String>,
    /// Replaces the default (metadata) transform for objects of this namespace.
    pub transform: Option<MetaTransform>,
}

impl fmt::Debug for NamespaceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceConfig")
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

impl NamespaceConfig {
    /// No settings of its own: the defaults apply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Filter this namespace by labels on the server.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Filter this namespace by fields on the server.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Transform the metadata of this namespace's objects instead of the default.
    pub fn transform(mut self, f: impl Fn(&mut ObjectMeta) + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }
}

/// Called with the informer's name and the error each time a watch (or list) fails,
/// before kube's watcher backs off and retries (controller-runtime's
/// `WatchErrorHandler`). The default only logs.
pub type WatchErrorHandler = Arc<dyn Fn(&str, &kube::runtime::watcher::Error) + Send + Sync>;

/// How the cache watches (controller-runtime's `cache.Options`).
#[derive(Clone)]
pub struct Options {
    /// Namespaces every namespaced type is restricted to (empty: all namespaces;
    /// controller-runtime's `DefaultNamespaces`).
    pub default_namespaces: Vec<String>,
    /// The default label selector (`None`: everything).
    pub default_label_selector: Option<String>,
    /// The default field selector (`None`: everything).
    pub default_field_selector: Option<String>,
    /// The default transform (default: [`strip_managed_fields`]; `None` keeps objects
    /// as the server sent them).
    pub default_transform: Option<MetaTransform>,
    /// Resync period (default [`DEFAULT_SYNC_PERIOD`], with ±10 % jitter per informer).
    pub sync_period: Duration,
    /// Per-type settings, keyed by `apiVersion/Kind` (see [`Options::by_object`]).
    pub by_object: HashMap<String, ByObject>,
    /// When true, reads of a type with no informer fail with
    /// [`Error::MissingInformer`](super::Error::MissingInformer) instead of starting one
    /// (controller-runtime's `ReaderFailOnMissingInformer`).
    pub reader_fail_on_missing_informer: bool,
    /// Events buffered per handler before overflow coalescing (default
    /// [`DEFAULT_HANDLER_BUFFER`]); see the `fanout` docs.
    pub handler_buffer: usize,
    /// Namespaces watched with settings of their own, keyed by namespace;
    /// [`NAMESPACE_ALL`] (`""`) stands for every namespace not
    /// named (controller-runtime's `DefaultNamespaces` map). Its keys add to
    /// `default_namespaces`. See [`Options::namespace_config`].
    pub namespace_configs: HashMap<String, NamespaceConfig>,
    /// Objects per page of an informer's initial list (`None`: kube's watcher default,
    /// 500; client-go's `WatchListPageSize`).
    pub page_size: Option<u32>,
    /// Called on every watch error (see [`WatchErrorHandler`]).
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Sync informers through a streaming list — one watch with `sendInitialEvents=true`
    /// that streams the current objects and then the changes (client-go's WatchList, on by
    /// default since 0.35; kube's `watcher::Config::streaming_lists`) — instead of a paged
    /// list then a watch: the objects are stored one by one as they arrive, so no whole
    /// list page is held at once. When the server refuses it (an API server without
    /// WatchList), the informer falls back to list and watch, as client-go's reflector
    /// does. Defaults to false (kube-runtime's default); per type with
    /// [`ByObject::streaming_lists`].
    pub streaming_lists: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            default_namespaces: Vec::new(),
            default_label_selector: None,
            default_field_selector: None,
            default_transform: Some(strip_managed_fields()),
            sync_period: DEFAULT_SYNC_PERIOD,
            by_object: HashMap::new(),
            reader_fail_on_missing_informer: false,
            handler_buffer: DEFAULT_HANDLER_BUFFER,
            namespace_configs: HashMap::new(),
            page_size: None,
            watch_error_handler: None,
            streaming_lists: false,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("default_namespaces", &self.default_namespaces)
            .field("default_label_selector", &self.default_label_selector)
            .field("default_field_selector", &self.default_field_selector)
            .field("default_transform", &self.default_transform.is_some())
            .field("sync_period", &self.sync_period)
            .field("by_object", &self.by_object)
            .field(
                "reader_fail_on_missing_informer",
                &self.reader_fail_on_missing_informer,
            )
            .field("handler_buffer", &self.handler_buffer)
            .field("namespace_configs", &self.namespace_configs)
            .field("page_size", &self.page_size)
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("streaming_lists", &self.streaming_lists)
            .finish()
    }
}

impl Options {
    /// Per-type settings for `K` (a typed resource).
    pub fn by_object<K>(mut self, by: ByObject) -> Self
    where
        K: Resource<DynamicType = ()>,
    {
        self.by_object.insert(type_key::<K>(&()), by);
        self
    }

    /// Per-type settings for a type given by its dynamic type (`DynamicObject`).
    pub fn by_object_with<K: Resource>(mut self, dt: &K::DynamicType, by: ByObject) -> Self {
        self.by_object.insert(type_key::<K>(dt), by);
        self
    }

    /// Restricts every namespaced type to these namespaces.
    pub fn default_namespaces<S: Into<String>>(mut self, ns: impl IntoIterator<Item = S>) -> Self {
        self.default_namespaces = ns.into_iter().map(Into::into).collect();
        self
    }

    /// Watches `namespace` with its own selectors and transform (an entry of Go's
    /// `DefaultNamespaces` map). [`NAMESPACE_ALL`] configures
    /// every namespace not named otherwise: its watch then excludes the named ones
    /// (`metadata.namespace!=<ns>`), so each object is watched once.
    pub fn namespace_config(
        mut self,
        namespace: impl Into<String>,
        config: NamespaceConfig,
    ) -> Self {
        self.namespace_configs.insert(namespace.into(), config);
        self
    }

    /// The settings that apply to one type.
    pub(crate) fn resolve<K>(&self, dt: &K::DynamicType) -> Resolved<K>
    where
        K: Resource + Send + Sync + 'static,
    {
        let by = self.by_object.get(&type_key::<K>(dt));
        let label_selector = by
            .and_then(|b| b.label_selector.clone())
            .or_else(|| self.default_label_selector.clone());
        let field_selector = by
            .and_then(|b| b.field_selector.clone())
            .or_else(|| self.default_field_selector.clone());
        let meta_transform = match by.and_then(|b| b.default_transform.clone()) {
            Some(t) => t,
            None => self.default_transform.clone(),
        };
        let base = WatchScope {
            namespace: None,
            label_selector,
            field_selector,
            transform: meta_transform,
        };
        let scopes = match by.and_then(|b| b.namespaces.clone()) {
            Some(ns) => scopes_of(&base, ns.iter().map(|n| (n.clone(), None)).collect()),
            None => {
                let mut named: Vec<(String, Option<&NamespaceConfig>)> = self
                    .namespace_configs
                    .iter()
                    .map(|(n, c)| (n.clone(), Some(c)))
                    .collect();
                for n in &self.default_namespaces {
                    if !self.namespace_configs.contains_key(n) {
                        named.push((n.clone(), None));
                    }
                }
                scopes_of(&base, named)
            }
        };
        Resolved {
            scopes,
            base,
            sync_period: by.and_then(|b| b.sync_period).unwrap_or(self.sync_period),
            transform: by.and_then(|b| b.transform_for::<K>()),
            handler_buffer: self.handler_buffer.max(1),
            page_size: self.page_size,
            watch_error_handler: self.watch_error_handler.clone(),
            streaming_lists: by
                .and_then(|b| b.streaming_lists)
                .unwrap_or(self.streaming_lists),
        }
    }
}

/// One watch of an informer: a namespace (`None`: all, or the cluster), its selectors,
/// and the metadata transform of its objects.
#[derive(Clone, Default)]
pub(crate) struct WatchScope {
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub transform: Option<MetaTransform>,
}

/// The watches for `named` namespaces (sorted; no entry: one watch of everything). An
/// all-namespaces entry among named ones excludes them by field selector.
fn scopes_of(
    base: &WatchScope,
    mut named: Vec<(String, Option<&NamespaceConfig>)>,
) -> Vec<WatchScope> {
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.dedup_by(|a, b| a.0 == b.0);
    if named.is_empty() {
        return vec![base.clone()];
    }
    let others: Vec<&str> = named
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    named
        .iter()
        .map(|(ns, cfg)| {
            let cfg = cfg.cloned().unwrap_or_default();
            let mut field_selector = cfg.field_selector.or_else(|| base.field_selector.clone());
            if ns.is_empty() && !others.is_empty() {
                let excluded: Vec<String> = others
                    .iter()
                    .map(|n| format!("metadata.namespace!={n}"))
                    .collect();
                let mut parts: Vec<String> = field_selector.into_iter().collect();
                parts.extend(excluded);
                field_selector = Some(parts.join(","));
            }
            WatchScope {
                namespace: Some(ns.clone()).filter(|n| !n.is_empty()),
                label_selector: cfg.label_selector.or_else(|| base.label_selector.clone()),
                field_selector,
                transform: cfg.transform.or_else(|| base.transform.clone()),
            }
        })
        .collect()
}

/// The `by_object` key of a type: `apiVersion/Kind`. `PartialObjectMeta<K>` shares
/// `K`'s key, so its selectors and namespaces match `K`'s.
pub fn type_key<K: Resource>(dt: &K::DynamicType) -> String {
    super::object::gvk_string::<K>(dt)
}

/// Options resolved for one informer.
pub(crate) struct Resolved<K> {
    /// The watches of a namespaced type (one, of everything, when unrestricted).
    pub scopes: Vec<WatchScope>,
    /// The one watch of a cluster-scoped type (namespace settings do not apply).
    pub base: WatchScope,
    pub sync_period: Duration,
    pub transform: Option<Transform<K>>,
    pub handler_buffer: usize,
    pub page_size: Option<u32>,
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Sync through a streaming list (`super::watchlist`).
    pub streaming_lists: bool,
}
