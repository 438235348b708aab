//! [`Options`]: how the cache (`super::Cache`) scopes and trims what it watches
//! (controller-runtime's `cache.Options` and `cache.ByObject`).
//!
//! Defaults apply to every type; [`ByObject`] overrides them for one type. The default
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

/// A transform run on every object's metadata before it is stored (any type).
pub type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// A transform for one type, run after the default one (controller-runtime's
/// `TransformFunc`).
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// The default transform: drop `metadata.managedFields`
/// (controller-runtime's `TransformStripManagedFields`).
pub fn strip_managed_fields() -> MetaTransform {
    Arc::new(|meta: &mut ObjectMeta| meta.managed_fields = None)
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
}

impl fmt::Debug for ByObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByObject")
            .field("namespaces", &self.namespaces)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("sync_period", &self.sync_period)
            .field("transform", &self.transform.is_some())
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

    /// The settings that apply to one type.
    pub(crate) fn resolve<K>(&self, dt: &K::DynamicType) -> Resolved<K>
    where
        K: Resource + Send + Sync + 'static,
    {
        let by = self.by_object.get(&type_key::<K>(dt));
        let namespaces = by
            .and_then(|b| b.namespaces.clone())
            .unwrap_or_else(|| self.default_namespaces.clone());
        Resolved {
            namespaces,
            label_selector: by
                .and_then(|b| b.label_selector.clone())
                .or_else(|| self.default_label_selector.clone()),
            field_selector: by
                .and_then(|b| b.field_selector.clone())
                .or_else(|| self.default_field_selector.clone()),
            sync_period: by.and_then(|b| b.sync_period).unwrap_or(self.sync_period),
            meta_transform: match by.and_then(|b| b.default_transform.clone()) {
                Some(t) => t,
                None => self.default_transform.clone(),
            },
            transform: by.and_then(|b| b.transform_for::<K>()),
            handler_buffer: self.handler_buffer.max(1),
        }
    }
}

/// The `by_object` key of a type: `apiVersion/Kind`. `PartialObjectMeta<K>` shares
/// `K`'s key, so its selectors and namespaces match `K`'s.
pub fn type_key<K: Resource>(dt: &K::DynamicType) -> String {
    super::object::gvk_string::<K>(dt)
}

/// Options resolved for one informer.
pub(crate) struct Resolved<K> {
    pub namespaces: Vec<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub sync_period: Duration,
    pub meta_transform: Option<MetaTransform>,
    pub transform: Option<Transform<K>>,
    pub handler_buffer: usize,
}
