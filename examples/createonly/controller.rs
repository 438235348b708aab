//! The internals article's last controller: `named("appServiceController")` with
//! one `watches::<AppService>` whose [`handler::Funcs`] enqueue on create and only
//! log updates and deletes — so only creates reach [`CreateOnlyReconciler`]. There is
//! no `for_`: without it the builder wires no `EnqueueRequestForObject`, and the
//! handler alone decides what is reconciled (`docs/internals.md` walks through it).

use ctrl::ControllerBuilder;
use ctrl::Reader;
use ctrl::client::{Client, ignore_not_found};
use ctrl::handler;
use ctrl::manager::{BoxError, Manager};
use ctrl::reconcile::{self, Action, Reconciler, Request};
use ctrl::recorder::{EventType, Recorder};
use ctrl::{CancellationToken, async_trait};

use super::crd::AppService;

/// The controller's name: its log field, metrics label and work-queue name.
pub const NAME: &str = "appServiceController";

/// The Lease replicas share with `--leader-elect` (kubebuilder sets `LeaderElectionID` in
/// `main` the same way).
pub const LEASE: &str = "createonly.app.example.com";

/// The Event reason the reconciler records on each AppService it reconciles.
pub const REASON: &str = "Reconciled";

/// Adds the controller to `mgr`.
pub fn setup(mgr: &Manager) -> Result<(), BoxError> {
    ControllerBuilder::new(mgr)
        .named(NAME)
        .watches::<AppService>(create_only())
        .complete(CreateOnlyReconciler {
            client: mgr.client(),
            recorder: mgr.event_recorder(NAME),
        })?;
    Ok(())
}

/// Go's `handler.Funcs{CreateFunc: enqueue, UpdateFunc: log, DeleteFunc: log}`.
pub fn create_only() -> handler::Funcs<AppService> {
    handler::Funcs::<AppService>::default()
        .on_create(|e, q| {
            let req = Request::from_obj(e.object.as_ref());
            tracing::info!(appservice = %req, "CreateFunc: enqueued");
            q.add(req);
        })
        .on_update(|e, _q| {
            let req = Request::from_obj(e.object_new.as_ref());
            tracing::info!(appservice = %req, "UpdateFunc: logged, not enqueued");
        })
        .on_delete(|e, _q| {
            let req = Request::from_obj(e.object.as_ref());
            tracing::info!(appservice = %req, "DeleteFunc: logged, not enqueued");
        })
}

/// Reads the AppService from the cache, logs it and records a `Reconciled` Event
/// on it (so that each reconcile shows in `kubectl get events`).
pub struct CreateOnlyReconciler {
    client: Client,
    recorder: Recorder,
}

#[async_trait]
impl Reconciler for CreateOnlyReconciler {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        req: Request,
    ) -> Result<Action, reconcile::Error> {
        let got = self
            .client
            .get::<AppService>(&req.namespace, &req.name)
            .await;
        let Some(app) = ignore_not_found(got)? else {
            tracing::info!(appservice = %req, "gone before its reconcile: nothing to do");
            return Ok(Action::done());
        };
        tracing::info!(appservice = %req, size = app.spec.size, image = %app.spec.image, "Reconciler is called");
        self.recorder.event(
            app.as_ref(),
            EventType::Normal,
            REASON,
            "Reconcile",
            format!(
                "reconciled on create (size {}, image {})",
                app.spec.size, app.spec.image
            ),
        );
        Ok(Action::done())
    }
}
