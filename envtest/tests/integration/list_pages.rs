//! Paginated lists read page by page (no copy of the collection per page): across
//! namespaces, with selectors, with `remainingItemCount`, and at the first page's
//! resourceVersion after updates, deletes and creates in and around the page boundaries.

use crate::common;

use std::collections::BTreeMap;

use common::cm;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};

/// Every page of `lp` (limit 3); the names in order, the rvs, and each page's remaining count.
async fn pages(
    api: &Api<ConfigMap>,
    lp: ListParams,
) -> (Vec<String>, Vec<String>, Vec<Option<i64>>) {
    let (mut names, mut rvs, mut remaining) = (Vec::new(), Vec::new(), Vec::new());
    let mut token: Option<String> = None;
    loop {
        let mut p = lp.clone().limit(3);
        if let Some(t) = &token {
            p = p.continue_token(t);
        }
        let page = api.list(&p).await.expect("page");
        names.extend(page.items.iter().map(|o| o.name_any()));
        rvs.push(page.metadata.resource_version.clone().unwrap_or_default());
        remaining.push(page.metadata.remaining_item_count);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            return (names, rvs, remaining);
        }
    }
}

/// Creates the namespace `name`.
async fn namespace(env: &ctrl_envtest::Environment, name: &str) {
    let mut n = Namespace::default();
    n.metadata.name = Some(name.into());
    Api::<Namespace>::all(env.client())
        .create(&PostParams::default(), &n)
        .await
        .expect("namespace");
}

fn labelled(name: &str, tier: &str) -> ConfigMap {
    let mut c = cm(name, &[]);
    c.metadata.labels = Some(BTreeMap::from([("tier".to_string(), tier.to_string())]));
    c
}

#[tokio::test]
async fn pages_cover_every_object_once_in_key_order() {
    let env = common::env().await;
    for ns in ["a", "b"] {
        namespace(&env, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(env.client(), ns);
        for i in 0..7 {
            let tier = if i % 2 == 0 { "web" } else { "db" };
            api.create(&PostParams::default(), &labelled(&format!("cm-{i}"), tier))
                .await
                .expect("create");
        }
    }
    let a: Api<ConfigMap> = Api::namespaced(env.client(), "a");
    let (names, _, remaining) = pages(&a, ListParams::default()).await;
    let want: Vec<String> = (0..7).map(|i| format!("cm-{i}")).collect();
    assert_eq!(names, want);
    assert_eq!(remaining, [Some(4), Some(1), None]);
    let (web, _, remaining) = pages(&a, ListParams::default().labels("tier=web")).await;
    assert_eq!(web, ["cm-0", "cm-2", "cm-4", "cm-6"]);
    assert_eq!(
        remaining,
        [None, None],
        "no remainingItemCount with a selector"
    );
    let all: Api<ConfigMap> = Api::all(env.client());
    let (names, _, _) = pages(&all, ListParams::default()).await;
    let ours: Vec<&String> = names.iter().filter(|n| n.starts_with("cm-")).collect();
    assert_eq!(ours.len(), 14);
}

#[tokio::test]
async fn a_continued_list_shows_the_first_pages_snapshot() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..8 {
        api.create(&PostParams::default(), &labelled(&format!("cm-{i}"), "v1"))
            .await
            .expect("create");
    }
    let first = api
        .list(&ListParams::default().limit(3))
        .await
        .expect("page 1");
    let token = first.metadata.continue_.clone().expect("a continue token");
    // After page 1: update one on the next page, delete one, re-create a deleted one, add two.
    let mut c5 = api.get("cm-5").await.expect("get");
    c5.metadata.labels = Some(BTreeMap::from([("tier".to_string(), "v2".to_string())]));
    api.replace("cm-5", &PostParams::default(), &c5)
        .await
        .expect("update");
    api.delete("cm-4", &Default::default())
        .await
        .expect("delete");
    api.delete("cm-6", &Default::default())
        .await
        .expect("delete");
    api.create(&PostParams::default(), &labelled("cm-6", "v3"))
        .await
        .expect("re-create");
    api.create(&PostParams::default(), &labelled("cm-35", "new"))
        .await
        .expect("create");
    api.create(&PostParams::default(), &labelled("cm-9", "new"))
        .await
        .expect("create");
    let mut rest = Vec::new();
    let mut counts = vec![first.metadata.remaining_item_count];
    let mut token = Some(token);
    while let Some(t) = token {
        let page = api
            .list(&ListParams::default().limit(2).continue_token(&t))
            .await
            .expect("next page");
        assert_eq!(
            page.metadata.resource_version,
            first.metadata.resource_version
        );
        rest.extend(page.items);
        counts.push(page.metadata.remaining_item_count);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
    }
    assert_eq!(
        counts,
        [Some(5), Some(3), Some(1), None],
        "remainingItemCount counts the first page's snapshot, whatever was written since"
    );
    let seen: Vec<(String, String)> = rest
        .iter()
        .map(|o| {
            (
                o.name_any(),
                o.labels().get("tier").cloned().unwrap_or_default(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = (3..8)
        .map(|i| (format!("cm-{i}"), "v1".to_string()))
        .collect();
    assert_eq!(
        seen, want,
        "pages after the first are read at its resourceVersion"
    );
    let now = pages(&api, ListParams::default()).await.0;
    assert_eq!(
        now,
        [
            "cm-0", "cm-1", "cm-2", "cm-3", "cm-35", "cm-5", "cm-6", "cm-7", "cm-9"
        ]
    );
}

/// A namespaced list and a list of every namespace, read at one resourceVersion and paged in
/// turn, whose first pages end at the same key: each page counts what follows in its own list.
#[tokio::test]
async fn interleaved_lists_count_their_own_remaining_items() {
    let env = common::env().await;
    namespace(&env, "a").await;
    let a: Api<ConfigMap> = Api::namespaced(env.client(), "a");
    for i in 0..7 {
        a.create(&PostParams::default(), &cm(&format!("cm-{i}"), &[]))
            .await
            .expect("create");
    }
    let d: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..6 {
        d.create(&PostParams::default(), &cm(&format!("cm-{i}"), &[]))
            .await
            .expect("create");
    }
    let all: Api<ConfigMap> = Api::all(env.client());
    let total = all
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .len();
    let (mut in_a, mut everywhere) = (Vec::new(), Vec::new());
    let (mut ta, mut tall): (Option<String>, Option<String>) = (None, None);
    for round in 0..3 {
        for (api, token, counts) in [(&a, &mut ta, &mut in_a), (&all, &mut tall, &mut everywhere)] {
            if round > 0 && token.is_none() {
                continue;
            }
            let mut p = ListParams::default().limit(3);
            if let Some(t) = token.as_deref() {
                p = p.continue_token(t);
            }
            let page = api.list(&p).await.expect("page");
            counts.push(page.metadata.remaining_item_count);
            *token = page.metadata.continue_.filter(|t| !t.is_empty());
        }
    }
    assert_eq!(in_a, [Some(4), Some(1), None]);
    let want: Vec<Option<i64>> = (1..=3).map(|p| Some(total as i64 - 3 * p)).collect();
    assert_eq!(everywhere, want, "{total} ConfigMaps in all");
}
