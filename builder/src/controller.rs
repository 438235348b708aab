//! [`ControllerBuilder`]: controller-runtime's `builder.ControllerManagedBy(mgr)`.
//!
//! | controller-runtime | ctrl |
//! |---|---|
//! | `ctrl.NewControllerManagedBy(mgr)` | [`ControllerBuilder::new(&mgr)`](ControllerBuilder::new) |
//! | `.For(&T{})` / `.For(&T{}, WithPredicates(p))` | [`.for_::<T>()`](ControllerBuilder::for_) / [`.for_with(ForOptions::new().with_predicate(p))`](ControllerBuilder::for_with) |
//! | `.For(&T{}, OnlyMetadata)` | [`.for_metadata::<T>()`](ControllerBuilder::for_metadata) (= `.for_::<PartialObjectMeta<T>>()`) |
//! | `.Owns(&U{})` / `.Owns(&U{}, MatchEveryOwner)` | [`.owns::<U>()`](ControllerBuilder::owns) / [`.owns_with(OwnsOptions::new().match_every_owner())`](ControllerBuilder::owns_with) |
//! | `.Watches(&V{}, h)` / `.WatchesMetadata(&V{}, h)` | [`.watches::<V>(h)`](ControllerBuilder::watches) / [`.watches_metadata::<V>(h)`](ControllerBuilder::watches_metadata) |
//! | `.For(&unstructured.Unstructured{gvk})` / `.Owns(..)` / `.Watches(.., h)` | [`.for_dynamic(ar)`](ControllerBuilder::for_dynamic) / [`.owns_dynamic(ar)`](ControllerBuilder::owns_dynamic) / [`.watches_dynamic(ar, h)`](ControllerBuilder::watches_dynamic) (`DynamicObject`; `ar` from `client::RestMapper`) |
//! | `.For` / `.Owns` / `.WatchesMetadata` of an unstructured object with `OnlyMetadata` | [`.for_dynamic_metadata(ar)`](ControllerBuilder::for_dynamic_metadata) / [`.owns_dynamic_metadata(ar)`](ControllerBuilder::owns_dynamic_metadata) / [`.watches_dynamic_metadata(ar, h)`](ControllerBuilder::watches_dynamic_metadata) |
//! | `.WatchesRawSource(src)` | [`.watches_raw_source(src)`](ControllerBuilder::watches_raw_source) |
//! | `.WithEventFilter(p)` | [`.with_event_filter(p)`](ControllerBuilder::with_event_filter) |
//! | `// +kubebuilder:rbac:groups=g,resources=r,verbs=v` | [`.permissions(rbac::rule().groups(["g"]).resources(["r"]).verbs(["v"]))`](ControllerBuilder::permissions) |
//! | `.WithOptions(o)` / `.WithLogConstructor(f)` / `.Named(n)` | [`.with_options(o)`](ControllerBuilder::with_options) / [`.with_log_constructor(f)`](ControllerBuilder::with_log_constructor) / [`.named(n)`](ControllerBuilder::named) |
//! | kubernetes-controller-sharding's `NewShardedReconciler(mgr)...InControllerRing(r).WithShardName(id)` | `.sharded(shard)` (feature `sharding`) |
//! | `.Build(r)` / `.Complete(r)` | [`.build(r)`](ControllerBuilder::build) / [`.complete(r)`](ControllerBuilder::complete) |
//! | `builder.TypedControllerManagedBy[request](mgr)` | [`ControllerBuilder::<R>::typed(&mgr)`](ControllerBuilder::typed) |
//!
//! The builder's type is `ControllerBuilder<R, F>`: `R` is the request type the
//! controller's queue holds ([`Request`] unless built with
//! [`typed`](ControllerBuilder::typed)), `F` the `For` type (`()` until `for_` is
//! called). `For` and `Owns` enqueue namespace/name, so they exist only for `Request`
//! controllers (Go's typed builder refuses them at run time: here it is a compile
//! error); a typed controller is fed by `Watches` whose handler maps objects to its
//! requests (`handler::EnqueueRequestsFromMapFunc`) and by raw sources. `F` lets
//! `complete` take a reconciler of `Arc<F>` objects, and only of those
//! ([`crate::reconciler`]).
//!
//! `For` watches `T` with `EnqueueRequestForObject`; `Owns` watches `U` with
//! `EnqueueRequestForOwner` of the `For` type (controller owner only by default);
//! `Watches` uses your handler. Every one of them is a `source::Kind` on the manager's
//! shared cache, filtered by the global filters and then its own predicates. Raw
//! sources are used as given (the global filters do not apply, as in Go).
//!
//! A build is checked before anything is created, so a failed build claims no
//! controller name.

use std::marker::PhantomData;
use std::sync::Arc;

use ctrl_runtime::cache::{Cache, CacheObject, Scoped};
use ctrl_runtime::client::RestMapper;
use ctrl_runtime::controller::{self, Controller};
use ctrl_runtime::handler::{
    EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler, with_low_priority_when_unchanged,
};
use ctrl_runtime::manager::Manager;
use ctrl_runtime::predicate::BoxPredicate;
use ctrl_runtime::reconcile::{Reconciler, Request, TypedRequest};
#[cfg(feature = "sharding")]
use ctrl_runtime::sharding::{Shard, ShardedReconciler};
use ctrl_runtime::source::{BoxSource, Kind, Source};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta};

use crate::error::Error;
use crate::filter::{DynamicGlobal, EventFilter, Global, ObjectView};
use crate::log::{LogConstructor, Logged};
use crate::options::{ForOptions, OwnsOptions, WatchesOptions};
use crate::reconciler::ReconcilerInput;
use crate::shared::Deferred;

type Filters = Arc<[Arc<dyn EventFilter>]>;
type MakeSource<R> = Box<dyn FnOnce(&Cache, &Filters) -> BoxSource<R> + Send>;
type MakeOwned<R> =
    Box<dyn FnOnce(&Cache, &Filters, EnqueueRequestForOwner) -> BoxSource<R> + Send>;

/// What the builder knows about the `For` type (only `Request` controllers have one).
struct ForInput<R: TypedRequest> {
    type_name: &'static str,
    group: String,
    kind: String,
    version: String,
    /// `None` for a dynamic type: resolved through discovery when the `Owns` sources start.
    namespaced: Option<bool>,
    make: MakeSource<R>,
    /// Wraps the reconciler for a shard; `None` for a dynamic type (not shardable).
    #[cfg(feature = "sharding")]
    sharded: Option<WrapSharded<R>>,
}

/// Wraps a reconciler so that it reconciles only its shard's objects
/// (`ShardedReconciler::boxed` of the `For` type).
#[cfg(feature = "sharding")]
type WrapSharded<R> = fn(Shard, Cache, Arc<dyn Reconciler<R>>) -> Arc<dyn Reconciler<R>>;

/// Builds a controller of `R` requests whose `For` type is `F` and registers it with a
/// manager (controller-runtime's `builder.Builder`, `TypedBuilder[R]`); see the module
/// docs for the Go -> Rust map and what `R` and `F` are.
pub struct ControllerBuilder<R: TypedRequest = Request, F = ()> {
    mgr: Manager,
    for_input: Option<ForInput<R>>,
    for_twice: bool,
    owns: Vec<MakeOwned<R>>,
    watches: Vec<MakeSource<R>>,
    raw_sources: Vec<BoxSource<R>>,
    filters: Vec<Arc<dyn EventFilter>>,
    options: controller::Options<R>,
    name: Option<String>,
    log_constructor: Option<LogConstructor<R>>,
    #[cfg(feature = "sharding")]
    shard: Option<Shard>,
    for_type: PhantomData<fn() -> F>,
}

impl<R: TypedRequest, F> std::fmt::Debug for ControllerBuilder<R, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("for", &self.for_input.as_ref().map(|i| i.type_name))
            .field("owns", &self.owns.len())
            .field("watches", &self.watches.len())
            .field("raw_sources", &self.raw_sources.len())
            .field("event_filters", &self.filters.len())
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A `source::Kind` of `K` on `cache`: global filters first, then `preds`.
fn kind_source<K, R>(
    cache: &Cache,
    filters: &Filters,
    handler: impl EventHandler<K, R>,
    preds: Vec<BoxPredicate<K>>,
) -> BoxSource<R>
where
    K: CacheObject<DynamicType = ()> + ObjectView,
    R: TypedRequest,
{
    let mut src = Kind::<K, R>::new(cache, handler);
    if !filters.is_empty() {
        src = src.with_predicate(Global::<K>::new(filters.clone()));
    }
    Arc::new(src.with_predicates(preds))
}

/// A `source::Kind` of the dynamic type `K` (`DynamicObject` or its
/// `PartialObjectMeta`) served by `ar`: global filters first, then `preds`.
fn dynamic_source<K, R>(
    cache: &Cache,
    filters: &Filters,
    ar: &ApiResource,
    handler: impl EventHandler<K, R>,
    preds: Vec<BoxPredicate<K>>,
) -> BoxSource<R>
where
    K: CacheObject<DynamicType = ApiResource>,
    R: TypedRequest,
{
    let mut src = Kind::<K, R>::new_with(cache, ar.clone(), handler);
    if !filters.is_empty() {
        src = src.with_predicate(DynamicGlobal::<K>::new(filters.clone(), ar));
    }
    Arc::new(src.with_predicates(preds))
}

/// The `Owns` handler: the controller owner only, or every owner.
fn owner_handler(owner: EnqueueRequestForOwner, match_every_owner: bool) -> EnqueueRequestForOwner {
    if match_every_owner {
        owner.match_every_owner()
    } else {
        owner.only_controller_owner()
    }
}

impl ControllerBuilder {
    /// A builder for a controller of [`Request`]s that `mgr` will run (Go's
    /// `ControllerManagedBy`).
    pub fn new(mgr: &Manager) -> Self {
        Self::typed(mgr)
    }
}

impl<R: TypedRequest> ControllerBuilder<R> {
    /// A builder for a controller of `R` requests that `mgr` will run (Go's
    /// `TypedControllerManagedBy[R]`): `ControllerBuilder::<MyRequest>::typed(&mgr)`.
    /// Feed it with [`watches`](Self::watches) whose handler maps objects to `R`
    /// (`handler::EnqueueRequestsFromMapFunc`) and with raw sources.
    pub fn typed(mgr: &Manager) -> Self {
        Self {
            mgr: mgr.clone(),
            for_input: None,
            for_twice: false,
            owns: Vec::new(),
            watches: Vec::new(),
            raw_sources: Vec::new(),
            filters: Vec::new(),
            options: controller::Options::default(),
            name: None,
            log_constructor: None,
            #[cfg(feature = "sharding")]
            shard: None,
            for_type: PhantomData,
        }
    }
}

impl<R: TypedRequest, F> ControllerBuilder<R, F> {
    /// The same builder with `For` type `G`.
    fn with_for_type<G>(self) -> ControllerBuilder<R, G> {
        ControllerBuilder {
            mgr: self.mgr,
            for_input: self.for_input,
            for_twice: self.for_twice,
            owns: self.owns,
            watches: self.watches,
            raw_sources: self.raw_sources,
            filters: self.filters,
            options: self.options,
            name: self.name,
            log_constructor: self.log_constructor,
            #[cfg(feature = "sharding")]
            shard: self.shard,
            for_type: PhantomData,
        }
    }

    /// Records `input` as the `For` type `G` (or that `For` was called twice).
    fn set_for<G>(mut self, input: ForInput<R>) -> ControllerBuilder<R, G> {
        if self.for_input.is_some() {
            self.for_twice = true;
        } else {
            self.for_input = Some(input);
        }
        self.with_for_type()
    }
}

impl<F> ControllerBuilder<Request, F> {
    /// Reconciles objects of `K`: their creates, updates and deletes enqueue their own
    /// key (Go's `For`). Call once; the default controller name is `K`'s kind, lower-cased.
    pub fn for_<K>(self) -> ControllerBuilder<Request, K>
    where
        K: CacheObject<DynamicType = ()> + ObjectView,
    {
        self.for_with::<K>(ForOptions::new())
    }

    /// [`for_`](Self::for_) with predicates (Go's `For(obj, WithPredicates(..))`).
    pub fn for_with<K>(self, opts: ForOptions<K>) -> ControllerBuilder<Request, K>
    where
        K: CacheObject<DynamicType = ()> + ObjectView,
    {
        let preds = opts.predicates;
        self.set_for(ForInput {
            type_name: std::any::type_name::<K>(),
            group: <K as kube::Resource>::group(&()).into_owned(),
            kind: <K as kube::Resource>::kind(&()).into_owned(),
            version: <K as kube::Resource>::version(&()).into_owned(),
            namespaced: Some(!<K::Scope as Scoped>::CLUSTER),
            make: Box::new(move |cache, filters| {
                kind_source::<K, _>(cache, filters, EnqueueRequestForObject, preds)
            }),
            #[cfg(feature = "sharding")]
            sharded: Some(ShardedReconciler::<K>::boxed),
        })
    }

    /// Reconciles `K` watching only its metadata (Go's `For(obj, OnlyMetadata)`); the
    /// cache holds `PartialObjectMeta<K>`, which is also what an object reconciler gets.
    pub fn for_metadata<K>(self) -> ControllerBuilder<Request, PartialObjectMeta<K>>
    where
        PartialObjectMeta<K>: CacheObject<DynamicType = ()> + ObjectView,
    {
        self.for_::<PartialObjectMeta<K>>()
    }

    /// Watches objects of `O` that the `For` type owns and reconciles their controller
    /// owner (Go's `Owns`). Needs [`for_`](Self::for_).
    pub fn owns<O>(self) -> Self
    where
        O: CacheObject<DynamicType = ()> + ObjectView,
    {
        self.owns_with::<O>(OwnsOptions::new())
    }

    /// [`owns`](Self::owns) with predicates, or for every owner
    /// (Go's `Owns(obj, MatchEveryOwner, WithPredicates(..))`).
    pub fn owns_with<O>(mut self, opts: OwnsOptions<O>) -> Self
    where
        O: CacheObject<DynamicType = ()> + ObjectView,
    {
        let OwnsOptions {
            predicates,
            match_every_owner,
        } = opts;
        self.owns.push(Box::new(move |cache, filters, owner| {
            let owner = owner_handler(owner, match_every_owner);
            kind_source::<O, _>(cache, filters, owner, predicates)
        }));
        self
    }

    /// [`owns`](Self::owns) watching only the metadata of `O` (Go's `Owns(obj, OnlyMetadata)`).
    pub fn owns_metadata<O>(self) -> Self
    where
        PartialObjectMeta<O>: CacheObject<DynamicType = ()> + ObjectView,
    {
        self.owns::<PartialObjectMeta<O>>()
    }
}

impl<R: TypedRequest, F> ControllerBuilder<R, F> {
    /// Watches objects of `W`, enqueueing what `handler` maps their events to (Go's
    /// `Watches`). On a priority queue, initial-list creates and resyncs go in at low
    /// priority, as in Go.
    pub fn watches<W>(self, handler: impl EventHandler<W, R>) -> Self
    where
        W: CacheObject<DynamicType = ()> + ObjectView,
    {
        self.watches_with::<W>(handler, WatchesOptions::new())
    }

    /// [`watches`](Self::watches) with predicates (Go's `Watches(obj, h, WithPredicates(..))`).
    pub fn watches_with<W>(
        mut self,
        handler: impl EventHandler<W, R>,
        opts: WatchesOptions<W>,
    ) -> Self
    where
        W: CacheObject<DynamicType = ()> + ObjectView,
    {
        let preds = opts.predicates;
        let handler = with_low_priority_when_unchanged(handler);
        self.watches.push(Box::new(move |cache, filters| {
            kind_source::<W, _>(cache, filters, handler, preds)
        }));
        self
    }

    /// [`watches`](Self::watches) of the metadata of `W` only (Go's `WatchesMetadata`);
    /// the handler sees `PartialObjectMeta<W>`.
    pub fn watches_metadata<W>(self, handler: impl EventHandler<PartialObjectMeta<W>, R>) -> Self
    where
        PartialObjectMeta<W>: CacheObject<DynamicType = ()> + ObjectView,
    {
        self.watches::<PartialObjectMeta<W>>(handler)
    }
}

impl<F> ControllerBuilder<Request, F> {
    /// Reconciles objects of the kind `ar` serves, as `DynamicObject`s (Go's
    /// `For(&unstructured.Unstructured{..})`; kube-runtime's `Controller::new_with(api,
    /// ar)`). The reconciler takes [`Request`]s and reads the object through
    /// `client.get_with(&ar, ..)`. Whether the kind is namespaced is asked of
    /// discovery when the controller starts. Resolve `ar` from a GVK with [`RestMapper`].
    pub fn for_dynamic(self, ar: ApiResource) -> ControllerBuilder<Request, DynamicObject> {
        self.for_dynamic_with(ar, ForOptions::new())
    }

    /// [`for_dynamic`](Self::for_dynamic) with predicates.
    pub fn for_dynamic_with(
        self,
        ar: ApiResource,
        opts: ForOptions<DynamicObject>,
    ) -> ControllerBuilder<Request, DynamicObject> {
        self.for_dynamic_of::<DynamicObject>(ar, opts.predicates)
    }

    /// [`for_dynamic`](Self::for_dynamic) watching only metadata (Go's `For(u,
    /// OnlyMetadata)`): the cache holds `PartialObjectMeta<DynamicObject>`.
    pub fn for_dynamic_metadata(
        self,
        ar: ApiResource,
    ) -> ControllerBuilder<Request, PartialObjectMeta<DynamicObject>> {
        self.for_dynamic_of::<PartialObjectMeta<DynamicObject>>(ar, Vec::new())
    }

    fn for_dynamic_of<K>(
        self,
        ar: ApiResource,
        preds: Vec<BoxPredicate<K>>,
    ) -> ControllerBuilder<Request, K>
    where
        K: CacheObject<DynamicType = ApiResource>,
    {
        self.set_for(ForInput {
            type_name: std::any::type_name::<K>(),
            group: ar.group.clone(),
            kind: ar.kind.clone(),
            version: ar.version.clone(),
            namespaced: None,
            make: Box::new(move |cache, filters| {
                dynamic_source::<K, _>(cache, filters, &ar, EnqueueRequestForObject, preds)
            }),
            #[cfg(feature = "sharding")]
            sharded: None,
        })
    }

    /// Watches `DynamicObject`s of the kind `ar` serves that the `For` type owns, and
    /// reconciles their controller owner (Go's `Owns` of an unstructured object).
    pub fn owns_dynamic(self, ar: ApiResource) -> Self {
        self.owns_dynamic_with(ar, OwnsOptions::new())
    }

    /// [`owns_dynamic`](Self::owns_dynamic) with predicates, or for every owner.
    pub fn owns_dynamic_with(self, ar: ApiResource, opts: OwnsOptions<DynamicObject>) -> Self {
        self.owns_dynamic_of::<DynamicObject>(ar, opts)
    }

    /// [`owns_dynamic`](Self::owns_dynamic) watching only metadata: the cache holds
    /// `PartialObjectMeta<DynamicObject>`.
    pub fn owns_dynamic_metadata(self, ar: ApiResource) -> Self {
        self.owns_dynamic_of::<PartialObjectMeta<DynamicObject>>(ar, OwnsOptions::new())
    }

    fn owns_dynamic_of<K>(mut self, ar: ApiResource, opts: OwnsOptions<K>) -> Self
    where
        K: CacheObject<DynamicType = ApiResource>,
    {
        let OwnsOptions {
            predicates,
            match_every_owner,
        } = opts;
        self.owns.push(Box::new(move |cache, filters, owner| {
            let owner = owner_handler(owner, match_every_owner);
            dynamic_source::<K, _>(cache, filters, &ar, owner, predicates)
        }));
        self
    }
}

impl<R: TypedRequest, F> ControllerBuilder<R, F> {
    /// Watches `DynamicObject`s of the kind `ar` serves, enqueueing what `handler` maps
    /// their events to (Go's `Watches` of an unstructured object).
    pub fn watches_dynamic(
        self,
        ar: ApiResource,
        handler: impl EventHandler<DynamicObject, R>,
    ) -> Self {
        self.watches_dynamic_with(ar, handler, WatchesOptions::new())
    }

    /// [`watches_dynamic`](Self::watches_dynamic) with predicates.
    pub fn watches_dynamic_with(
        mut self,
        ar: ApiResource,
        handler: impl EventHandler<DynamicObject, R>,
        opts: WatchesOptions<DynamicObject>,
    ) -> Self {
        let preds = opts.predicates;
        let handler = with_low_priority_when_unchanged(handler);
        self.watches.push(Box::new(move |cache, filters| {
            dynamic_source::<DynamicObject, _>(cache, filters, &ar, handler, preds)
        }));
        self
    }

    /// [`watches_dynamic`](Self::watches_dynamic) of the metadata only (Go's
    /// `WatchesMetadata` of an unstructured object): the cache holds
    /// `PartialObjectMeta<DynamicObject>`.
    pub fn watches_dynamic_metadata(
        mut self,
        ar: ApiResource,
        handler: impl EventHandler<PartialObjectMeta<DynamicObject>, R>,
    ) -> Self {
        let handler = with_low_priority_when_unchanged(handler);
        self.watches.push(Box::new(move |cache, filters| {
            dynamic_source::<PartialObjectMeta<DynamicObject>, _>(
                cache,
                filters,
                &ar,
                handler,
                Vec::new(),
            )
        }));
        self
    }

    /// Adds a source as it is: a `source::Channel`, `source::Func`, or a `source::Kind`
    /// with its own handler and predicates (Go's `WatchesRawSource`). The global event
    /// filters do not apply to it.
    pub fn watches_raw_source(mut self, source: impl Source<R>) -> Self {
        self.raw_sources.push(Arc::new(source));
        self
    }

    /// Adds a filter every `For`, `Owns` and `Watches` event must pass, before the
    /// watch's own predicates (Go's `WithEventFilter`); see [`crate::filter`].
    pub fn with_event_filter(mut self, filter: impl EventFilter) -> Self {
        self.filters.push(Arc::new(filter));
        self
    }

    /// The controller's options (Go's `WithOptions`). Empty `group`/`kind` are filled
    /// from the `For` type. Fields left unset take the manager's
    /// [`Options::controller`](ctrl_runtime::manager::Options::controller): a
    /// `max_concurrent_reconciles` of 0 first its `group_kind_concurrency` entry for
    /// the `For` kind (`"Kind.group"`), then its `max_concurrent_reconciles`.
    pub fn with_options(mut self, options: controller::Options<R>) -> Self {
        self.options = options;
        self
    }

    /// Names the controller (Go's `Named`). The name labels its metrics and logs and
    /// must be non-empty and unique in the process unless the options'
    /// `skip_name_validation` is set. Default: the `For` kind, lower-cased.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Runs each reconcile inside the span `f(Some(&request))` returns (Go's
    /// `WithLogConstructor`); `f(None)` is the controller's span, entered while
    /// building.
    pub fn with_log_constructor(
        mut self,
        f: impl Fn(Option<&R>) -> tracing::Span + Send + Sync + 'static,
    ) -> Self {
        self.log_constructor = Some(Arc::new(f));
        self
    }
}

impl<F> ControllerBuilder<Request, F> {
    #[cfg(feature = "sharding")]
    /// Runs the controller as `shard` of its ring (kubernetes-controller-sharding's
    /// `NewShardedReconciler(mgr).InControllerRing(ring).WithShardName(id)`): it
    /// reconciles only `For` objects labelled with the shard, acknowledges drains
    /// before the reconciler sees them (removing both labels, never reconciling that
    /// version again), and runs on every replica (no leader election). Needs
    /// [`for_`](Self::for_); the manager's cache should select the shard's objects of
    /// the `For` and `Owns` types ([`Shard::select`]) and run the shard's lease
    /// ([`Shard::lease`]); see `ctrl_runtime::sharding`.
    pub fn sharded(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }
}

impl<R: TypedRequest, F> ControllerBuilder<R, F> {
    /// Declares permissions the reconciler needs beyond watching its `For`, `Owns` and
    /// `Watches` types (which the manager infers): kubebuilder's
    /// `// +kubebuilder:rbac:groups=..,resources=..,verbs=..` markers, e.g.
    /// `.permissions(rbac::rule().groups([""]).resources(["pods"]).verbs(["create", "delete"]))`
    /// (a rule or any iterator of rules). They go into
    /// [`Manager::rbac_rules`](ctrl_runtime::manager::Manager::rbac_rules) at once.
    pub fn permissions(self, rules: impl IntoIterator<Item = ctrl_runtime::rbac::Rule>) -> Self {
        self.mgr.add_rbac_rules(rules);
        self
    }

    /// The controller's name: `named`, else the `For` kind lower-cased.
    fn controller_name(&self) -> Result<String, Error> {
        if let Some(name) = &self.name
            && !name.is_empty()
        {
            return Ok(name.clone());
        }
        match &self.for_input {
            Some(f) => Ok(f.kind.to_lowercase()),
            None => Err(Error::MissingName),
        }
    }

    /// Builds the controller with its watches, without registering it with the
    /// manager (Go's `Build`). `reconciler` is a `Reconciler` of the controller's
    /// requests, or of `Arc<F>` objects of the `For` type `F` (see
    /// [`crate::reconciler`]).
    pub fn build<I: ReconcilerInput<R, F>>(
        self,
        reconciler: impl Reconciler<I>,
    ) -> Result<Controller<R>, Error> {
        let client = self.mgr.client();
        self.build_inner(I::into_reconciler(reconciler, &client))
    }

    /// Builds the controller and adds it to the manager, which starts it (on the
    /// leader) once the caches have synced (Go's `Complete`).
    pub fn complete<I: ReconcilerInput<R, F>>(
        self,
        reconciler: impl Reconciler<I>,
    ) -> Result<(), Error> {
        let mgr = self.mgr.clone();
        let controller = self.build(reconciler)?;
        mgr.add(controller)?;
        Ok(())
    }

    /// Checks the build, then makes the controller with its sources.
    fn build_inner(self, mut inner: Arc<dyn Reconciler<R>>) -> Result<Controller<R>, Error> {
        if self.for_twice {
            return Err(Error::ForCalledTwice);
        }
        let name = self.controller_name()?;
        if !self.owns.is_empty() && self.for_input.is_none() {
            return Err(Error::OwnsWithoutFor);
        }
        if self.for_input.is_none() && self.watches.is_empty() && self.raw_sources.is_empty() {
            return Err(Error::NoWatches);
        }
        let Self {
            mgr,
            for_input,
            owns,
            watches,
            raw_sources,
            filters,
            mut options,
            log_constructor,
            #[cfg(feature = "sharding")]
            shard,
            ..
        } = self;
        let config = &mgr.options().controller;
        if let Some(f) = &for_input {
            if options.group.is_empty() {
                options.group = f.group.clone();
            }
            if options.kind.is_empty() {
                options.kind = f.kind.clone();
            }
            if options.max_concurrent_reconciles == 0
                && let Some(n) = config.concurrency_for(&f.group, &f.kind)
            {
                options.max_concurrent_reconciles = n;
            }
        }
        // Mutated only by the shard wrap below.
        #[cfg_attr(not(feature = "sharding"), allow(unused_mut))]
        let mut options = options.default_from_config(config);
        let cache = mgr.cache();
        #[cfg(feature = "sharding")]
        if let Some(shard) = shard {
            let Some(f) = &for_input else {
                return Err(Error::ShardedWithoutFor);
            };
            let Some(wrap) = f.sharded else {
                return Err(Error::ShardedDynamicFor);
            };
            options.need_leader_election = Some(false);
            inner = wrap(shard, cache.clone(), inner);
        }
        if let Some(ctor) = log_constructor {
            let span = ctor(None);
            span.in_scope(|| tracing::debug!(controller = %name, "building controller"));
            inner = Arc::new(Logged { inner, ctor });
        }
        let (group, kind) = (options.group.clone(), options.kind.clone());
        let filters: Filters = Arc::from(filters);
        let mut sources = Vec::new();
        if let Some(f) = for_input {
            sources.extend(owned_sources(&cache, &filters, &f, owns));
            sources.insert(0, (f.make)(&cache, &filters));
        }
        sources.extend(watches.into_iter().map(|make| make(&cache, &filters)));
        sources.extend(raw_sources);
        let ctrl = Controller::with_sources(name, inner, options, sources)?;
        tracing::debug!(
            controller = %ctrl.name(),
            controllerGroup = %group,
            controllerKind = %kind,
            "controller built"
        );
        Ok(ctrl)
    }
}

/// The `Owns` sources of the `For` type `f`. Their handler needs to know whether the
/// owner is namespaced: a typed `For` says; for a dynamic one, discovery is asked
/// when the sources start (once for all of them), so that building never waits.
fn owned_sources<R: TypedRequest>(
    cache: &Cache,
    filters: &Filters,
    f: &ForInput<R>,
    owns: Vec<MakeOwned<R>>,
) -> Vec<BoxSource<R>> {
    if let Some(namespaced) = f.namespaced {
        let owner = EnqueueRequestForOwner::for_group_kind(&f.group, &f.kind, namespaced);
        return owns
            .into_iter()
            .map(|make| make(cache, filters, owner.clone()))
            .collect();
    }
    let scope = Arc::new(tokio::sync::OnceCell::new());
    let name = format!("source of objects owned by {}", f.type_name);
    owns.into_iter()
        .map(|make| {
            let (cache, filters, scope) = (cache.clone(), filters.clone(), scope.clone());
            let (group, version, kind) = (f.group.clone(), f.version.clone(), f.kind.clone());
            let build = async move {
                let namespaced = *scope
                    .get_or_init(|| dynamic_scope(&cache, &group, &version, &kind))
                    .await;
                let owner = EnqueueRequestForOwner::for_group_kind(&group, &kind, namespaced);
                make(&cache, &filters, owner)
            };
            Arc::new(Deferred::new(name.clone(), build)) as BoxSource<R>
        })
        .collect()
}

/// Whether the dynamic `For` kind is namespaced, asked of discovery; namespaced when
/// discovery cannot tell (the kind may not be installed yet), with a warning.
async fn dynamic_scope(cache: &Cache, group: &str, version: &str, kind: &str) -> bool {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    match RestMapper::new(cache.kube_client().clone())
        .is_namespaced(&gvk)
        .await
    {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(group, kind, error = %e, "cannot tell the scope of the For kind; assuming namespaced");
            true
        }
    }
}
