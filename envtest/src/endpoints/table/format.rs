//! Cell formatting shared by the printers (`table::printers`), ported from upstream's
//! `duration.HumanDuration`, `metav1.FormatLabelSelector` and the printers' helpers: ages,
//! label selectors, label maps, container names and images.

use serde_json::Value;

/// A string field at `path` (`["spec", "type"]`), or "".
pub(crate) fn s<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// An integer field at `path`, or 0.
pub(crate) fn int(obj: &Value, path: &[&str]) -> i64 {
    at(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The value at `path`.
pub(crate) fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(k))
}

/// The array at `path`, or an empty slice.
pub(crate) fn arr<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    at(obj, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `v`, or `<none>` when empty (upstream prints `<none>` for missing values).
pub(crate) fn or_none(v: impl Into<String>) -> String {
    let v = v.into();
    if v.is_empty() { "<none>".into() } else { v }
}

/// The age of an RFC 3339 timestamp as kubectl prints it (`translateTimestampSince`).
pub(crate) fn age(ts: &str) -> String {
    if ts.is_empty() {
        return "<unknown>".into();
    }
    let Ok(t) = ts.parse::<k8s_openapi::jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    human_duration(ctrl_clock::now().as_second() - t.as_second())
}

/// Upstream's `duration.HumanDuration` of `secs` seconds: `42s`, `5m3s`, `3h`, `2d4h`, `1y12d`.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return with_rest(minutes, "m", secs % 60, "s");
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return with_rest(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return with_rest(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return with_rest(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

fn with_rest(major: i64, unit: &str, rest: i64, rest_unit: &str) -> String {
    if rest == 0 {
        format!("{major}{unit}")
    } else {
        format!("{major}{unit}{rest}{rest_unit}")
    }
}

/// A `metav1.LabelSelector` as `a=b,c in (d,e),!f`, or `<none>` when it selects everything.
pub(crate) fn label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        parts.extend(
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))),
        );
    }
    for e in arr(sel, &["matchExpressions"]) {
        let key = s(e, &["key"]);
        let values: Vec<&str> = arr(e, &["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match s(e, &["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        });
    }
    parts.sort();
    or_none(parts.join(","))
}

/// A map of labels as `a=b,c=d` (sorted), or `<none>`.
pub(crate) fn label_map(m: Option<&Value>) -> String {
    let mut parts: Vec<String> = m
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    parts.sort();
    or_none(parts.join(","))
}

/// The containers of the pod template at `template` (`["spec", "template"]`): names, images.
pub(crate) fn containers(obj: &Value, template: &[&str]) -> (String, String) {
    let mut path = template.to_vec();
    path.extend(["spec", "containers"]);
    let cs = arr(obj, &path);
    let names: Vec<&str> = cs.iter().map(|c| s(c, &["name"])).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// The `status` of the condition of type `ty`, or "".
pub(crate) fn condition<'a>(obj: &'a Value, ty: &str) -> &'a str {
    arr(obj, &["status", "conditions"])
        .iter()
        .find(|c| s(c, &["type"]) == ty)
        .map(|c| s(c, &["status"]))
        .unwrap_or("")
}
