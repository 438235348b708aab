//! A controller for CRDs known only at run time, end to end on envtest: the kinds are
//! resolved from their GVKs through discovery (`client::RestMapper`, cached, refreshed
//! on a miss), watched as `DynamicObject`s (`for_dynamic` + `owns_dynamic`), and the
//! reconciler creates an owned object with a controller reference
//! (`create_or_update_with`, `set_controller_reference_dynamic`) and writes the
//! owner's status; a change to the owned object reconciles its owner.

use crate::common;

use common::{manager, next, start, until};
use ctrl_builder::ControllerBuilder;
use ctrl_envtest::Environment;
use ctrl_runtime::cache::Reader;
use ctrl_runtime::client::{ObjectWriter, Patch, PatchParams, RestMapper, ignore_not_found};
use ctrl_runtime::controllerutil::{
    self, OwnerReferenceOptions, create_or_update_with, set_controller_reference_dynamic,
};
use ctrl_runtime::reconcile::{self, Action, Request};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use tokio::sync::mpsc;

const GROUP: &str = "dyn.ctrl.rs";

fn crd(kind: &str) -> CustomResourceDefinition {
    let plural = format!("{}s", kind.to_lowercase());
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
    .expect("crd")
}

async fn install(env: &Environment, kind: &str) {
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd(kind))
        .await
        .expect("install crd");
}

fn discovery_requests(env: &Environment) -> usize {
    env.faults()
        .count_requests(|r| r.path == format!("/apis/{GROUP}/v1"))
}

/// Resolves both kinds from their GVKs; shows the mapper caching and refreshing.
async fn resolve(env: &Environment) -> (ApiResource, ApiResource) {
    install(env, "Gadget").await;
    let mapper = RestMapper::new(env.client());
    let gvk = |k: &str| GroupVersionKind::gvk(GROUP, "v1", k);
    let before = discovery_requests(env);
    let gadgets = mapper.api_resource(&gvk("Gadget")).await.expect("gadget");
    assert_eq!(gadgets.plural, "gadgets");
    assert!(mapper.is_namespaced(&gvk("Gadget")).await.expect("scope"));
    assert_eq!(
        discovery_requests(env),
        before + 1,
        "the second lookup is cached"
    );
    let missing = mapper
        .api_resource(&gvk("Part"))
        .await
        .expect_err("not yet");
    assert!(missing.is_no_match(), "{missing}");
    install(env, "Part").await;
    let parts = mapper
        .api_resource(&gvk("Part"))
        .await
        .expect("found after a refresh");
    assert_eq!(
        discovery_requests(env),
        before + 3,
        "each miss refetched once"
    );
    (gadgets, parts)
}

#[tokio::test]
async fn a_dynamic_controller_for_crds_known_only_at_run_time() {
    let env = Environment::start().await.expect("envtest");
    let (gadgets, parts) = resolve(&env).await;
    let mgr = manager(&env);
    let client = mgr.client();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (g_ar, p_ar) = (gadgets.clone(), parts.clone());
    let reconciler = reconcile::func(move |_ctx, req: Request| {
        let (client, g_ar, p_ar, tx) = (client.clone(), g_ar.clone(), p_ar.clone(), tx.clone());
        async move {
            let err = |e: &dyn std::fmt::Display| reconcile::Error::new(e.to_string());
            let got = client
                .get_with::<DynamicObject>(&g_ar, &req.namespace, &req.name)
                .await;
            let Some(gadget) = ignore_not_found(got).map_err(|e| err(&e))? else {
                let _ = tx.send(req);
                return Ok(Action::done());
            };
            let mut part =
                DynamicObject::new(&format!("{}-part", req.name), &p_ar).within(&req.namespace);
            create_or_update_with(&client, &p_ar, &mut part, |p| {
                set_controller_reference_dynamic(
                    &*gadget,
                    &g_ar,
                    p,
                    OwnerReferenceOptions::default(),
                )?;
                p.data["spec"] = json!({"size": gadget.data["spec"]["size"]});
                Ok(())
            })
            .await
            .map_err(|e| err(&e))?;
            let status = json!({"status": {"parts": 1}});
            client
                .status()
                .patch_with(
                    &g_ar,
                    &*gadget,
                    &Patch::Merge(&status),
                    PatchParams::default(),
                )
                .await
                .map_err(|e| err(&e))?;
            let _ = tx.send(req);
            Ok(Action::done())
        }
    });
    ControllerBuilder::new(&mgr)
        .for_dynamic(gadgets.clone())
        .owns_dynamic(parts.clone())
        .complete(reconciler)
        .expect("complete");
    let running = start(&mgr);

    let gadget_api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &gadgets);
    let part_api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &parts);
    let mut g = DynamicObject::new("g1", &gadgets).within("default");
    g.data = json!({"spec": {"size": 3}});
    let g = gadget_api
        .create(&PostParams::default(), &g)
        .await
        .expect("create gadget");
    assert_eq!(next(&mut rx).await, Request::new("default", "g1"));

    let part = part_api.get("g1-part").await.expect("the owned part");
    assert_eq!(part.data["spec"]["size"], 3);
    let refs = part.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].kind, "Gadget");
    assert_eq!(refs[0].api_version, format!("{GROUP}/v1"));
    assert_eq!(Some(&refs[0].uid), g.metadata.uid.as_ref());
    assert_eq!(refs[0].controller, Some(true));
    assert!(controllerutil::has_owner_reference_dynamic(
        &part, &g, &gadgets
    ));
    let stored = gadget_api.get("g1").await.expect("gadget");
    assert_eq!(stored.data["status"]["parts"], 1);

    // A part controlled by a gadget that does not exist reconciles that gadget's key:
    // only `owns_dynamic` maps it there.
    let mut orphan = DynamicObject::new("orphan-part", &parts).within("default");
    let mut ghost = DynamicObject::new("ghost", &gadgets).within("default");
    ghost.metadata.uid = Some("ghost-uid".into());
    set_controller_reference_dynamic(
        &ghost,
        &gadgets,
        &mut orphan,
        OwnerReferenceOptions::default(),
    )
    .expect("owner ref");
    part_api
        .create(&PostParams::default(), &orphan)
        .await
        .expect("orphan");
    until(&mut rx, &Request::new("default", "ghost")).await;
    running.stop().await;
}

#[tokio::test]
async fn metadata_only_dynamic_watches() {
    let env = Environment::start().await.expect("envtest");
    let (gadgets, parts) = resolve(&env).await;
    let mgr = manager(&env);
    let (r, mut rx) = common::reporter();
    ControllerBuilder::new(&mgr)
        .for_dynamic_metadata(gadgets.clone())
        .owns_dynamic_metadata(parts.clone())
        .named("gadget-metadata")
        .complete(r)
        .expect("complete");
    let running = start(&mgr);
    let g = DynamicObject::new("m1", &gadgets).within("default");
    Api::<DynamicObject>::namespaced_with(env.client(), "default", &gadgets)
        .create(&PostParams::default(), &g)
        .await
        .expect("gadget");
    assert_eq!(next(&mut rx).await, Request::new("default", "m1"));
    let mut ghost = DynamicObject::new("meta-ghost", &gadgets).within("default");
    ghost.metadata.uid = Some("meta-ghost-uid".into());
    let mut part = DynamicObject::new("meta-part", &parts).within("default");
    set_controller_reference_dynamic(
        &ghost,
        &gadgets,
        &mut part,
        OwnerReferenceOptions::default(),
    )
    .expect("owner ref");
    Api::<DynamicObject>::namespaced_with(env.client(), "default", &parts)
        .create(&PostParams::default(), &part)
        .await
        .expect("part");
    until(&mut rx, &Request::new("default", "meta-ghost")).await;
    let informers = format!("{:?}", mgr.cache());
    assert!(informers.contains("dyn.ctrl.rs/v1/Part"), "{informers}");
    running.stop().await;
}
