//! The generated webhook code of one API (`create webhook`) and its test: the
//! defaulter, validator and conversion hub pieces chosen by the flags.

use crate::project::{Api, Project};
use crate::render::fill;

const DEFAULT_PLAIN: &str = "        if obj.spec.foo.is_none() {\n            obj.spec.foo = Some(\"bar\".into());\n        }\n";
const DEFAULT_IMAGE: &str =
    "        if obj.spec.size.is_none() {\n            obj.spec.size = Some(1);\n        }\n";
const VALIDATE_PLAIN: &str = "        let mut errors = Vec::new();
        if obj.spec.foo.as_deref() == Some(\"\") {
            errors.push(FieldError::invalid(&Path::new(\"spec\").child(\"foo\"), \"\", \"must not be empty\"));
        }
";
const VALIDATE_IMAGE: &str = "        let mut errors = Vec::new();
        if let Some(size) = obj.spec.size.filter(|s| !(1..=3).contains(s)) {
            let path = Path::new(\"spec\").child(\"size\");
            errors.push(FieldError::invalid(&path, size, \"must be between 1 and 3\"));
        }
";

/// `src/webhook/<kind>.rs`.
pub fn webhook(p: &Project, a: &Api, vars: &[(&'static str, String)]) -> String {
    let image = a.image.is_some();
    let mut calls = String::new();
    let mut body = String::new();
    let mut v = vars.to_vec();
    v.push((
        "default_body",
        if image { DEFAULT_IMAGE } else { DEFAULT_PLAIN }.into(),
    ));
    v.push((
        "validate_body",
        if image {
            VALIDATE_IMAGE
        } else {
            VALIDATE_PLAIN
        }
        .into(),
    ));
    if a.defaulting {
        calls += &format!("\n        .with_defaulter({}Defaulter)", a.kind);
        body += &fill(include_str!("../templates/webhook_defaulter.rs.tmpl"), &v);
    }
    if a.validation {
        calls += &format!("\n        .with_validator({}Validator)", a.kind);
        body += &fill(include_str!("../templates/webhook_validator.rs.tmpl"), &v);
    }
    if a.conversion {
        calls += "\n        .with_conversion_hub()";
        body += &fill(include_str!("../templates/webhook_conversion.rs.tmpl"), &v);
    }
    v.push(("builder_calls", calls));
    let _ = p;
    fill(include_str!("../templates/webhook_head.rs.tmpl"), &v) + &body
}

/// The checks of the webhook test: defaulting fills the field in, validation rejects.
fn checks(a: &Api) -> String {
    let image = a.image.is_some();
    let mut s = String::new();
    if a.defaulting {
        let (field, want) = if image {
            ("size", "Some(1)")
        } else {
            ("foo", "Some(\"bar\".into())")
        };
        s += &format!(
            "    // Created with `spec.{field}` unset: the defaulting webhook fills it in.\n    \
             let mut obj = {m}::sample();\n    obj.spec.{field} = None;\n    \
             let created = api.create(&PostParams::default(), &obj).await.expect(\"create\");\n    \
             assert_eq!(created.spec.{field}, {want});\n",
            m = a.module()
        );
    }
    if a.validation {
        let (field, bad) = if image {
            ("size", "Some(5)")
        } else {
            ("foo", "Some(String::new())")
        };
        s += &format!(
            "    // An invalid `spec.{field}`: the validating webhook rejects it.\n    \
             let mut bad = {m}::sample();\n    bad.metadata.name = Some(\"invalid\".into());\n    \
             bad.spec.{field} = {bad};\n    \
             match api.create(&PostParams::default(), &bad).await {{\n        \
             Err(kube::Error::Api(s)) => assert!(s.message.contains(\"spec.{field}\"), \"{{}}\", s.message),\n        \
             other => panic!(\"expected a rejection, got {{other:?}}\"),\n    }}\n",
            m = a.module()
        );
    }
    s
}

/// `tests/<kind>_webhook.rs`.
pub fn webhook_test(a: &Api, vars: &[(&'static str, String)]) -> String {
    let mut v = vars.to_vec();
    v.push(("webhook_checks", checks(a)));
    fill(include_str!("../templates/test_webhook.rs.tmpl"), &v)
}
