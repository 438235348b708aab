//! ValidatingAdmissionPolicy admission: for a write, every stored
//! `ValidatingAdmissionPolicyBinding` whose policy's `matchConstraints` (and the binding's
//! `matchResources`) match the request runs the policy's CEL ([`crate::cel::policy`]) once per
//! param object found through `paramRef` (or once with `params: null`), and its failures are
//! enforced by the binding's `validationActions`: `Deny` refuses with upstream's message and the
//! code of the validation's `reason` (422 `Invalid` by default), `Warn` adds a `Warning`, `Audit`
//! is accepted and dropped (there is no audit log). Evaluation errors and misconfigured bindings
//! obey the policy's `failurePolicy`. Rules and selectors match as webhooks' do ([`super::rules`]).
//! Compiled with the `cel` feature; without it no policy can be stored and [`super`] has a
//! `policy` that runs none.

use serde_json::{Map, Value, json};

use crate::api::selector::LabelSelector;
use crate::api::status::ApiError;
use crate::cel::policy::{Activation, Failure, Verdict, evaluate};
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;

use super::{Attributes, Configured, GROUP, configs, rules};

/// Whether any policy is bound (the handlers then run admission even without webhooks):
/// read from the count of bindings, without listing them.
pub(crate) fn any_bound(configured: &Configured, rt: &ResourceType) -> bool {
    !(rt.group == GROUP || rt.virtual_create || configured.no_bindings())
}

fn name_of(o: &Value) -> &str {
    o.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Runs every bound policy on a write whose new object is `new` (none for a delete): warnings go
/// to the request's, the first denial is the error.
pub(crate) fn admit(
    api: &Apiserver,
    configured: &Configured,
    a: &Attributes,
    new: Option<&Value>,
) -> Result<(), ApiError> {
    if !any_bound(configured, a.rt) {
        return Ok(());
    }
    let bindings = configs(api, "validatingadmissionpolicybindings");
    let mut policies = configs(api, "validatingadmissionpolicies");
    policies.sort_by(|x, y| name_of(x).cmp(name_of(y)));
    let w = Write {
        rt: a.rt,
        sub: a.sub,
        op: a.op.as_str(),
        name: a.name,
        namespace: a.namespace,
        new,
        old: a.old,
        dry_run: a.dry_run,
    };
    for p in &policies {
        let bound = bindings
            .iter()
            .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(name_of(p)));
        for b in bound {
            if let Some(denial) = run_binding(api, &w, p, b, a.warnings) {
                return Err(denial);
            }
        }
    }
    Ok(())
}

/// The write as policies see it.
struct Write<'a> {
    rt: &'a ResourceType,
    sub: Option<&'a str>,
    op: &'static str,
    name: &'a str,
    namespace: Option<&'a str>,
    new: Option<&'a Value>,
    old: Option<&'a Value>,
    dry_run: bool,
}

/// One policy under one binding: `Some(denial)` if the request is refused.
fn run_binding(
    api: &Apiserver,
    a: &Write,
    p: &Value,
    b: &Value,
    warnings: &super::Warnings,
) -> Option<ApiError> {
    let spec = p.get("spec")?;
    let ns_labels = rules::namespace_labels(api, a.rt, a.namespace, a.new.or(a.old));
    if !matches(spec.get("matchConstraints"), a, ns_labels.as_ref(), true)
        || !matches(
            b.pointer("/spec/matchResources"),
            a,
            ns_labels.as_ref(),
            false,
        )
    {
        return None;
    }
    let failures = match params(api, a, spec, b) {
        Err(message) => vec![Failure {
            message: format!("failed to configure binding: {message}"),
            reason: "Invalid".into(),
            error: true,
        }],
        Ok(params) => params
            .into_iter()
            .flat_map(|params| {
                let act = activation(api, a, params);
                match evaluate(spec, &act) {
                    Verdict::Skipped => Vec::new(),
                    Verdict::Failures(f) => f,
                }
            })
            .collect(),
    };
    let ignore = spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
    let actions: Vec<&str> = b
        .pointer("/spec/validationActions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let (policy, binding) = (name_of(p), name_of(b));
    for f in failures.iter().filter(|f| !(f.error && ignore)) {
        if actions.contains(&"Warn") {
            warnings.add(&format!("Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{binding}': {}", f.message));
        }
        if actions.contains(&"Deny") {
            return Some(denial(
                a,
                &format!(
                    "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
                    f.message
                ),
                &f.reason,
            ));
        }
    }
    None
}

/// Whether `m` (a policy's `matchConstraints` or a binding's `matchResources`) matches; an
/// absent binding `matchResources` matches everything, an absent policy constraint nothing.
fn matches(
    m: Option<&Value>,
    a: &Write,
    ns_labels: Option<&Map<String, Value>>,
    required: bool,
) -> bool {
    let Some(m) = m.filter(|m| m.is_object()) else {
        return !required;
    };
    let as_hook = |rules_key: &str| {
        let config = json!({"webhooks": [{"name": "policy", "rules": m.get(rules_key).cloned().unwrap_or(json!([])),
            "namespaceSelector": m.get("namespaceSelector"), "objectSelector": m.get("objectSelector"),
            "matchPolicy": m.get("matchPolicy")}]});
        rules::hooks(&[config]).pop()
    };
    let named = |r: &Value| {
        let names = r.get("resourceNames").and_then(Value::as_array);
        names.is_none_or(|n| n.is_empty() || n.iter().any(|x| x.as_str() == Some(a.name)))
    };
    let rule_list = |k: &str| {
        m.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let included = match m.get("resourceRules") {
        None if !required => true,
        _ => {
            as_hook("resourceRules").is_some_and(|h| h.matches_rules(a.rt, a.sub, a.op))
                && rule_list("resourceRules").iter().any(named)
        }
    };
    let excluded = as_hook("excludeResourceRules")
        .is_some_and(|h| h.matches_rules(a.rt, a.sub, a.op))
        && rule_list("excludeResourceRules").iter().any(named);
    let selected =
        as_hook("resourceRules").is_some_and(|h| h.matches_selectors(ns_labels, a.new, a.old));
    included && !excluded && selected
}

/// The param objects of a binding: one `null` when the policy takes none.
fn params(api: &Apiserver, a: &Write, spec: &Value, b: &Value) -> Result<Vec<Value>, String> {
    let Some(kind) = spec.get("paramKind").filter(|k| k.is_object()) else {
        return Ok(vec![Value::Null]);
    };
    let Some(r) = b.pointer("/spec/paramRef").filter(|r| r.is_object()) else {
        return Err("binding has no paramRef for the policy's paramKind".into());
    };
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind_name = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let snapshot = api.registry.snapshot();
    let Some(prt) = snapshot
        .in_group_version(group, version)
        .find(|t| t.kind == kind_name)
        .cloned()
    else {
        return Err(format!(
            "failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'"
        ));
    };
    let ns = r
        .get("namespace")
        .and_then(Value::as_str)
        .or(a.namespace.filter(|_| prt.namespaced));
    let found: Vec<Value> = match (r.get("name").and_then(Value::as_str), r.get("selector")) {
        (Some(name), _) => api
            .store
            .get_value(
                &prt.store_key(),
                &crate::registry::objects::okey(&prt, ns.filter(|_| prt.namespaced), name),
            )
            .into_iter()
            .collect(),
        (None, Some(sel)) => list_selected(api, &prt, ns, sel)?,
        (None, None) => return Err("one of name or selector must be provided".into()),
    };
    let deny = r.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny");
    match (found.is_empty(), deny) {
        (true, true) => {
            Err("no params found for policy binding with `Deny` parameterNotFoundAction".into())
        }
        _ => Ok(found),
    }
}

fn list_selected(
    api: &Apiserver,
    prt: &ResourceType,
    ns: Option<&str>,
    sel: &Value,
) -> Result<Vec<Value>, String> {
    let mut parts: Vec<String> = Vec::new();
    for (k, v) in sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
    }
    let selector = LabelSelector::parse(&parts.join(","))?;
    let (_, items) = api
        .store
        .list(&prt.store_key(), ns.filter(|_| prt.namespaced), None)
        .map_err(|_| "params are not listable")?;
    Ok(items
        .iter()
        .map(|(_, b)| crate::storage::parse(b))
        .filter(|o| selector.matches_object(o))
        .collect())
}

fn activation(api: &Apiserver, a: &Write, params: Value) -> Activation {
    let rt = a.rt;
    let request = json!({
        "operation": a.op, "name": a.name, "namespace": a.namespace.unwrap_or(""), "dryRun": a.dry_run,
        "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "subResource": a.sub.unwrap_or(""),
        "requestKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
    });
    let namespace_object = match (rt.namespaced, a.namespace) {
        (true, Some(ns)) => namespace(api, ns).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    Activation {
        object: a.new.cloned().unwrap_or(Value::Null),
        old_object: a.old.cloned().unwrap_or(Value::Null),
        request,
        params,
        namespace_object,
    }
}

fn namespace(api: &Apiserver, ns: &str) -> Option<Value> {
    let ns_rt = api
        .registry
        .snapshot()
        .get("", "v1", "namespaces")
        .cloned()?;
    api.store.get_value(
        &ns_rt.store_key(),
        &crate::registry::objects::okey(&ns_rt, None, ns),
    )
}

/// The refusal: `<resource> "<name>" is forbidden: <message>`, with the reason's code.
fn denial(a: &Write, message: &str, reason: &str) -> ApiError {
    let (code, reason) = match reason {
        "Unauthorized" => (401, "Unauthorized"),
        "Forbidden" => (403, "Forbidden"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    let resource = crate::api::status::qualified(&a.rt.group, &a.rt.plural);
    ApiError::new(
        code,
        reason,
        format!("{resource} {:?} is forbidden: {message}", a.name),
    )
    .with_details(json!({
        "name": a.name, "group": a.rt.group, "kind": a.rt.plural, "causes": [{"message": message}],
    }))
}
