//! ServiceAccount tokens: JWTs with upstream's claims (`iss`, `sub`, `aud`, `exp`, `iat`,
//! `nbf`, `jti` and the `kubernetes.io` claim naming the ServiceAccount and its uid), signed
//! with an HMAC-SHA256 key that lives only in this server (upstream signs with the
//! service-account key pair; the token shape is the same). Issued by the TokenRequest
//! subresource (`review::token_request`), checked by `authn`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::hmac;
use serde_json::{Value, json};

/// The issuer and default audience of this server's tokens (kube-apiserver's usual
/// `--service-account-issuer`).
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claims {
    pub namespace: String,
    pub name: String,
    /// The ServiceAccount's uid when the token was issued.
    pub uid: String,
    pub audiences: Vec<String>,
    pub id: String,
    pub expires: i64,
}

/// Signs and verifies tokens with one random key.
pub(crate) struct Signer {
    key: hmac::Key,
    kid: String,
}

impl Signer {
    /// A signer with a fresh random key.
    pub fn new() -> Self {
        let bytes: [u8; 32] = rand::random();
        Signer {
            key: hmac::Key::new(hmac::HMAC_SHA256, &bytes),
            kid: B64.encode(&ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref()[..12]),
        }
    }

    /// A token for `claims`, issued at `now` (Unix seconds).
    pub fn issue(&self, c: &Claims, now: i64) -> String {
        let header = json!({"alg": "HS256", "kid": self.kid});
        let payload = json!({
            "aud": c.audiences,
            "exp": c.expires,
            "iat": now,
            "iss": ISSUER,
            "jti": c.id,
            "kubernetes.io": {
                "namespace": c.namespace,
                "serviceaccount": {"name": c.name, "uid": c.uid},
            },
            "nbf": now,
            "sub": format!("system:serviceaccount:{}:{}", c.namespace, c.name),
        });
        let signed = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(payload.to_string())
        );
        let tag = hmac::sign(&self.key, signed.as_bytes());
        format!("{signed}.{}", B64.encode(tag.as_ref()))
    }

    /// The claims of a token this signer issued, if its signature holds and it is valid at
    /// `now` (`nbf` ≤ now < `exp`). Whether its ServiceAccount still exists is `authn`'s check.
    pub fn verify(&self, token: &str, now: i64) -> Option<Claims> {
        let (signed, sig) = token.rsplit_once('.')?;
        let sig = B64.decode(sig).ok()?;
        hmac::verify(&self.key, signed.as_bytes(), &sig).ok()?;
        let (_, payload) = signed.split_once('.')?;
        let p: Value = serde_json::from_slice(&B64.decode(payload).ok()?).ok()?;
        let int = |k: &str| p.get(k).and_then(Value::as_i64);
        if p.get("iss").and_then(Value::as_str) != Some(ISSUER)
            || int("nbf")? > now
            || int("exp")? <= now
        {
            return None;
        }
        let k8s = p.get("kubernetes.io")?;
        let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        Some(Claims {
            namespace: s(k8s.get("namespace")),
            name: s(k8s.pointer("/serviceaccount/name")),
            uid: s(k8s.pointer("/serviceaccount/uid")),
            audiences: p
                .get("aud")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            id: s(p.get("jti")),
            expires: int("exp")?,
        })
    }
}

/// Unix seconds now.
pub(crate) fn unix_now() -> i64 {
    ctrl_clock::system_now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            namespace: "default".into(),
            name: "sa".into(),
            uid: "u-1".into(),
            audiences: vec![ISSUER.into()],
            id: "j".into(),
            expires: 1_000 + 3600,
        }
    }

    #[test]
    fn a_token_verifies_until_it_expires() {
        let s = Signer::new();
        let t = s.issue(&claims(), 1_000);
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(s.verify(&t, 1_000), Some(claims()));
        assert_eq!(s.verify(&t, 4_599).map(|c| c.name), Some("sa".into()));
        assert_eq!(s.verify(&t, 4_600), None, "expired at exp");
        assert_eq!(s.verify(&t, 999), None, "not before nbf");
    }

    #[test]
    fn a_forged_or_foreign_token_is_refused() {
        let s = Signer::new();
        let t = s.issue(&claims(), 1_000);
        assert_eq!(
            Signer::new().verify(&t, 1_000),
            None,
            "another server's key"
        );
        let (h, rest) = t.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let forged = json!({"iss": ISSUER, "nbf": 0, "exp": 9_999_999_999i64, "kubernetes.io": {"namespace": "kube-system", "serviceaccount": {"name": "admin", "uid": "x"}}});
        let forged = format!("{h}.{}.{sig}", B64.encode(forged.to_string()));
        assert_eq!(s.verify(&forged, 1_000), None);
        for junk in ["", "a.b", "a.b.c", "...", "x.y.!!"] {
            assert_eq!(s.verify(junk, 1_000), None, "{junk}");
        }
    }
}
