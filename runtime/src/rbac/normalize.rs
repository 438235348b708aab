//! [`normalize`]: controller-gen's `NormalizeRules` — one rule per resource, `core`
//! read as `""`, then rules merged that differ only in verbs, then only in resources,
//! then only in groups, then only in URLs; every list sorted and deduplicated, the
//! rules sorted by their key, and `*` standing alone among verbs.

use std::collections::{BTreeMap, BTreeSet};

use super::{PolicyRule, Rule};

/// A rule in normal form: sorted sets.
#[derive(Clone, Default)]
struct Norm {
    groups: BTreeSet<String>,
    resources: BTreeSet<String>,
    names: BTreeSet<String>,
    urls: BTreeSet<String>,
    verbs: BTreeSet<String>,
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join("&")
}

/// Which field a merge step leaves out of the key (and unions).
#[derive(Clone, Copy)]
enum Field {
    Verbs,
    Resources,
    Groups,
    Urls,
}

impl Norm {
    fn key(&self, without: Field) -> [String; 5] {
        let part = |f: Field, s: &BTreeSet<String>| {
            if std::mem::discriminant(&f) == std::mem::discriminant(&without) {
                String::new()
            } else {
                join(s)
            }
        };
        [
            part(Field::Groups, &self.groups),
            part(Field::Resources, &self.resources),
            part(Field::Verbs, &self.verbs),
            join(&self.names),
            part(Field::Urls, &self.urls),
        ]
    }

    fn absorb(&mut self, other: Norm, field: Field) {
        let (mine, theirs) = match field {
            Field::Verbs => (&mut self.verbs, other.verbs),
            Field::Resources => (&mut self.resources, other.resources),
            Field::Groups => (&mut self.groups, other.groups),
            Field::Urls => (&mut self.urls, other.urls),
        };
        mine.extend(theirs);
    }

    /// controller-gen's sort key: groups + resources + names + urls.
    fn sort_key(&self) -> String {
        format!(
            "{} + {} + {} + {}",
            join(&self.groups),
            join(&self.resources),
            join(&self.names),
            join(&self.urls)
        )
    }

    fn into_policy(self) -> PolicyRule {
        let opt = |s: BTreeSet<String>| (!s.is_empty()).then(|| s.into_iter().collect());
        let verbs = if self.verbs.contains("*") {
            vec!["*".to_string()]
        } else {
            self.verbs.into_iter().collect()
        };
        PolicyRule {
            api_groups: opt(self.groups),
            resources: opt(self.resources),
            resource_names: opt(self.names),
            non_resource_urls: opt(self.urls),
            verbs,
        }
    }
}

/// Merges rules whose keys (all fields but `field`) are equal, unioning `field`.
fn merge(rules: Vec<Norm>, field: Field) -> Vec<Norm> {
    let mut out: BTreeMap<[String; 5], Norm> = BTreeMap::new();
    for r in rules {
        match out.entry(r.key(field)) {
            std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().absorb(r, field),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(r);
            }
        }
    }
    out.into_values().collect()
}

/// One normal-form rule per resource of `r` (or one without resources).
fn split(r: &Rule) -> Vec<Norm> {
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<_>>();
    let base = Norm {
        groups: r
            .groups
            .iter()
            .map(|g| {
                if g == "core" {
                    String::new()
                } else {
                    g.clone()
                }
            })
            .collect(),
        resources: BTreeSet::new(),
        names: set(&r.resource_names),
        urls: set(&r.urls),
        verbs: set(&r.verbs),
    };
    if r.resources.is_empty() {
        return vec![base];
    }
    r.resources
        .iter()
        .map(|res| Norm {
            resources: BTreeSet::from([res.clone()]),
            ..base.clone()
        })
        .collect()
}

/// `rules` merged, deduplicated and sorted as controller-gen writes them into a
/// ClusterRole or Role. Rules without verbs are dropped.
pub fn normalize(rules: &[Rule]) -> Vec<PolicyRule> {
    let split: Vec<Norm> = rules
        .iter()
        .filter(|r| !r.verbs.is_empty())
        .flat_map(split)
        .collect();
    let mut merged = merge(split, Field::Verbs);
    for field in [Field::Resources, Field::Groups, Field::Urls] {
        merged = merge(merged, field);
    }
    merged.sort_by_key(Norm::sort_key);
    merged.into_iter().map(Norm::into_policy).collect()
}

#[cfg(test)]
mod tests {
    use super::super::rule;
    use super::*;

    fn show(rules: &[PolicyRule]) -> Vec<String> {
        rules
            .iter()
            .map(|r| {
                format!(
                    "{:?} {:?} {:?} {:?} {:?}",
                    r.api_groups.clone().unwrap_or_default(),
                    r.resources.clone().unwrap_or_default(),
                    r.resource_names.clone().unwrap_or_default(),
                    r.non_resource_urls.clone().unwrap_or_default(),
                    r.verbs
                )
            })
            .collect()
    }

    #[test]
    fn verbs_of_one_resource_merge_then_resources_with_equal_verbs() {
        let got = normalize(&[
            rule()
                .groups(["apps"])
                .resources(["deployments"])
                .verbs(["list", "get"]),
            rule()
                .groups(["apps"])
                .resources(["deployments"])
                .verbs(["watch", "get"]),
            rule()
                .groups(["apps"])
                .resources(["statefulsets"])
                .verbs(["get", "list", "watch"]),
            rule()
                .groups(["core"])
                .resources(["pods", "configmaps"])
                .verbs(["get"]),
            rule()
                .groups([""])
                .resources(["pods/status"])
                .verbs(["get"]),
        ]);
        assert_eq!(
            show(&got),
            [
                r#"[""] ["configmaps", "pods", "pods/status"] [] [] ["get"]"#,
                r#"["apps"] ["deployments", "statefulsets"] [] [] ["get", "list", "watch"]"#,
            ]
        );
    }

    #[test]
    fn groups_merge_when_resources_and_verbs_agree_and_star_stands_alone() {
        let got = normalize(&[
            rule()
                .groups(["batch"])
                .resources(["jobs"])
                .verbs(["create"]),
            rule()
                .groups(["apps"])
                .resources(["jobs"])
                .verbs(["create"]),
            rule().groups(["x"]).resources(["ys"]).verbs(["get", "*"]),
            rule().urls(["/metrics"]).verbs(["get"]),
            rule().urls(["/healthz"]).verbs(["get"]),
            rule()
                .groups(["x"])
                .resources(["zs"])
                .verbs([] as [&str; 0]),
        ]);
        assert_eq!(
            show(&got),
            [
                r#"[] [] [] ["/healthz", "/metrics"] ["get"]"#,
                r#"["apps", "batch"] ["jobs"] [] [] ["create"]"#,
                r#"["x"] ["ys"] [] [] ["*"]"#,
            ]
        );
    }

    #[test]
    fn resource_names_keep_rules_apart() {
        let got = normalize(&[
            rule()
                .groups([""])
                .resources(["configmaps"])
                .resource_names(["a"])
                .verbs(["get"]),
            rule().groups([""]).resources(["configmaps"]).verbs(["get"]),
        ]);
        assert_eq!(got.len(), 2, "{:?}", show(&got));
    }
}
