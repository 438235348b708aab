//! Unit tests of the engine: rules taken from upstream's CRD validation tests
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go`) and docs.

use serde_json::{Value, json};

use super::rules::validate;

fn widget(spec_schema: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec_schema}})
}

fn errors(schema: &Value, obj: Value, old: Option<Value>) -> Vec<String> {
    validate(schema, &obj, old.as_ref())
        .errors
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn eval(rule: &str, schema: Value, value: Value) -> Vec<String> {
    let mut s = schema;
    s["x-kubernetes-validations"] = json!([{"rule": rule}]);
    errors(&widget(s), json!({"spec": value}), None)
}

fn ok(rule: &str, schema: Value, value: Value) {
    assert_eq!(eval(rule, schema, value), Vec::<String>::new(), "{rule}");
}

fn str_schema() -> Value {
    json!({"type": "string"})
}

#[test]
fn rule_failure_has_upstream_wording() {
    let spec = json!({"type": "object", "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"}]});
    let got = errors(
        &widget(spec),
        json!({"spec": {"replicas": 5, "max": 3}}),
        None,
    );
    assert_eq!(
        got,
        ["spec: Invalid value: \"object\": replicas must not exceed max"]
    );
}

#[test]
fn default_message_reason_and_field_path() {
    let spec = json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.a > 0"},
            {"rule": "self.a > 1", "message": "m", "reason": "FieldValueForbidden", "fieldPath": ".a"},
            {"rule": "self.a > 2", "message": "r", "reason": "FieldValueRequired"},
            {"rule": "self.a > 3", "reason": "FieldValueDuplicate"}]});
    let got = errors(&widget(spec), json!({"spec": {"a": 0}}), None);
    assert_eq!(
        got,
        [
            "spec: Invalid value: \"object\": failed rule: self.a > 0",
            "spec.a: Forbidden: m",
            "spec: Required value: r",
            "spec: Duplicate value: \"object\"",
        ]
    );
}

#[test]
fn message_expression_is_used_when_it_evaluates() {
    let spec = json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a > 10", "message": "static",
            "messageExpression": "'a is ' + string(self.a) + ', want more than 10'"}]});
    let got = errors(&widget(spec), json!({"spec": {"a": 3}}), None);
    assert_eq!(
        got,
        ["spec: Invalid value: \"object\": a is 3, want more than 10"]
    );
}

#[test]
fn rules_on_list_items_and_map_values_have_indexed_paths() {
    let spec = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('x')"}]}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}}}});
    let got = errors(
        &widget(spec),
        json!({"spec": {"items": ["xa", "b"], "labels": {"k": "long"}}}),
        None,
    );
    assert_eq!(
        got,
        [
            "spec.items[1]: Invalid value: \"string\": failed rule: self.startsWith('x')",
            "spec.labels[k]: Invalid value: \"string\": failed rule: self.size() < 3",
        ]
    );
}

#[test]
fn transition_rules_only_on_update() {
    let spec = json!({"type": "object", "properties": {"v": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "v is immutable"}]}}});
    let schema = widget(spec);
    assert!(errors(&schema, json!({"spec": {"v": "a"}}), None).is_empty());
    assert!(
        errors(
            &schema,
            json!({"spec": {"v": "a"}}),
            Some(json!({"spec": {"v": "a"}}))
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            &schema,
            json!({"spec": {"v": "b"}}),
            Some(json!({"spec": {"v": "a"}}))
        ),
        ["spec.v: Invalid value: \"string\": v is immutable"]
    );
    // No old value at that node (the field is new): not evaluated.
    assert!(
        errors(
            &schema,
            json!({"spec": {"v": "b"}}),
            Some(json!({"spec": {}}))
        )
        .is_empty()
    );
}

#[test]
fn optional_old_self_is_an_optional() {
    let spec = json!({"type": "object", "properties": {"v": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self.v == oldSelf.value().v", "optionalOldSelf": true, "message": "fixed"}]});
    let schema = widget(spec);
    assert!(errors(&schema, json!({"spec": {"v": "a"}}), None).is_empty());
    assert_eq!(
        errors(
            &schema,
            json!({"spec": {"v": "b"}}),
            Some(json!({"spec": {"v": "a"}}))
        )
        .len(),
        1
    );
}

#[test]
fn unchanged_invalid_values_are_ratcheted() {
    let spec = json!({"type": "object", "properties": {
        "a": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
        "b": {"type": "integer"}}});
    let schema = widget(spec);
    let old = json!({"spec": {"a": 20, "b": 1}});
    let out = validate(&schema, &json!({"spec": {"a": 20, "b": 2}}), Some(&old));
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(
        out.warnings,
        ["spec.a: Invalid value: \"integer\": failed rule: self < 10"]
    );
    assert_eq!(
        errors(&schema, json!({"spec": {"a": 21, "b": 2}}), Some(old)).len(),
        1
    );
}

#[test]
fn map_list_items_correlate_by_key() {
    let spec = json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}}});
    let schema = widget(spec);
    let old = json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}});
    let reordered = json!({"spec": {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 3}]}});
    assert!(errors(&schema, reordered, Some(old.clone())).is_empty());
    let changed = json!({"spec": {"ports": [{"name": "a", "port": 9}]}});
    assert_eq!(
        errors(&schema, changed, Some(old)),
        ["spec.ports[0]: Invalid value: \"object\": port is immutable"]
    );
}

#[test]
fn standard_macros_and_strings() {
    let list = json!({"type": "array", "items": {"type": "string"}});
    ok(
        "self.all(x, x.size() > 0) && self.exists(x, x == 'a') && self.exists_one(x, x == 'b')",
        list.clone(),
        json!(["a", "b"]),
    );
    ok(
        "self.map(x, x.upperAscii()) == ['A', 'B'] && self.filter(x, x != 'a') == ['b']",
        list.clone(),
        json!(["a", "b"]),
    );
    ok(
        "self.join('-') == 'a-b' && 'a,b'.split(',') == self",
        list,
        json!(["a", "b"]),
    );
    ok(
        "self.matches('^[a-z]+$') && self.charAt(1) == 'b' && self.indexOf('c') == 2 && self.substring(1, 3) == 'bc'",
        str_schema(),
        json!("abc"),
    );
    ok(
        "self.lowerAscii() == 'abc' && self.replace('B', 'x') == 'AxC' && '  x '.trim() == 'x'",
        str_schema(),
        json!("ABC"),
    );
    ok(
        "'%s-%d'.format(['a', 1]) == 'a-1'",
        str_schema(),
        json!("x"),
    );
}

#[test]
fn has_and_optionals() {
    let obj =
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
    ok(
        "has(self.a) && !has(self.b)",
        obj.clone(),
        json!({"a": "x"}),
    );
    ok(
        "self.?b.orValue('none') == 'none' && self.?a.hasValue()",
        obj,
        json!({"a": "x"}),
    );
}

#[test]
fn kubernetes_list_library() {
    let ints = json!({"type": "array", "items": {"type": "integer"}});
    ok(
        "self.isSorted() && self.sum() == 6 && self.min() == 1 && self.max() == 3",
        ints.clone(),
        json!([1, 2, 3]),
    );
    ok(
        "self.indexOf(2) == 1 && self.lastIndexOf(2) == 3 && self.indexOf(9) == -1",
        ints.clone(),
        json!([1, 2, 3, 2]),
    );
    ok("!self.isSorted()", ints, json!([2, 1]));
}

#[test]
fn kubernetes_regex_url_quantity_ip_libraries() {
    ok(
        "self.find('[0-9]+') == '123' && self.findAll('[a-z]') == ['a', 'b']",
        str_schema(),
        json!("a123b"),
    );
    ok(
        "isURL(self) && url(self).getHost() == 'example.com:8080' && url(self).getScheme() == 'https'",
        str_schema(),
        json!("https://example.com:8080/x"),
    );
    ok(
        "url(self).getHostname() == 'example.com' && url(self).getPort() == '8080' && url(self).getEscapedPath() == '/x'",
        str_schema(),
        json!("https://example.com:8080/x"),
    );
    ok(
        "isQuantity(self) && quantity(self) == quantity('1024Mi') && quantity(self).isGreaterThan(quantity('1M'))",
        str_schema(),
        json!("1Gi"),
    );
    ok(
        "quantity(self).add(quantity('500m')).compareTo(quantity('1')) == 0 && quantity('2').asInteger() == 2",
        str_schema(),
        json!("500m"),
    );
    ok("!isQuantity(self)", str_schema(), json!("12zz"));
    ok(
        "isIP(self) && ip(self).family() == 4 && ip(self).isLoopback() && !isIP('1.2.3')",
        str_schema(),
        json!("127.0.0.1"),
    );
    ok(
        "isCIDR(self) && cidr(self).containsIP(ip('10.1.2.3')) && cidr(self).prefixLength() == 8 && !cidr(self).containsIP('11.0.0.1')",
        str_schema(),
        json!("10.0.0.0/8"),
    );
    ok(
        "cidr(self).containsCIDR('10.1.0.0/16') && cidr('10.1.2.3/8').masked() == cidr(self) && cidr(self).ip() == ip('10.0.0.0')",
        str_schema(),
        json!("10.0.0.0/8"),
    );
}

#[test]
fn runtime_errors_are_reported_with_the_rule() {
    let obj = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(
        eval("self.a == 'x'", obj, json!({})),
        ["spec: Invalid value: \"object\": no such key: a evaluating rule: self.a == 'x'"]
    );
}

#[test]
fn numbers_are_doubles_when_the_schema_says_number() {
    ok("self > 0.5", json!({"type": "number"}), json!(1));
}

#[test]
fn root_rules_see_name_but_not_other_metadata() {
    let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('w')"}],
        "properties": {"spec": {"type": "object"}}});
    assert!(errors(&schema, json!({"metadata": {"name": "w1"}}), None).is_empty());
    assert_eq!(
        errors(&schema, json!({"metadata": {"name": "v1"}}), None).len(),
        1
    );
}

#[test]
fn runtime_cost_limit_stops_a_pathological_rule() {
    let list = json!({"type": "array", "maxItems": 1000, "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x + y >= 0))"}, {"rule": "false"}]});
    let schema = widget(list);
    let items: Vec<i64> = (0..1000).collect();
    let got = errors(&schema, json!({"spec": items}), None);
    assert_eq!(
        got,
        [
            "spec: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, x + y >= 0))"
        ]
    );
    assert!(
        errors(&schema, json!({"spec": [1, 2, 3]}), None).len() == 1,
        "small lists run (and `false` fails)"
    );
}

#[test]
fn formatted_fields_are_timestamps_and_durations() {
    let obj = json!({"type": "object", "properties": {
        "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"},
        "every": {"type": "string", "format": "duration"}}});
    ok(
        "self.start < self.end && self.every >= duration('1m') && self.end - self.start == duration('1h')",
        obj,
        json!({"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T01:00:00Z", "every": "5m"}),
    );
}
