//! The hash ring: consistent hashing of objects onto shards, bit for bit as
//! kubernetes-controller-sharding's `consistenthash` and `key` packages do it, so a Go
//! sharder and a ctrl sharder (or a ctrl shard and a Go shard) agree on every answer.
//!
//! - [`HashRing`]: each shard contributes [`TOKENS_PER_SHARD`] tokens,
//!   `xxhash64("<shard>-<i>")` for `i` in `0..100`; a key goes to the shard owning the first
//!   token `>=` `xxhash64(key)`, wrapping round to the smallest token.
//! - [`key_for_object`] / [`key_for_controller`]: the hash key of a main object
//!   (`group/Kind/namespace/name`) and of a controlled object (its controller owner's key),
//!   so an owner and everything it controls land on the same shard.
//!
//! The sharder (`super::sharder`) builds a ring from the available shards' leases
//! (`super::lease`) on every assignment; shards never need the ring.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use xxhash_rust::xxh64::xxh64;

/// Virtual nodes (tokens) per shard: upstream's `DefaultTokensPerNode`.
pub const TOKENS_PER_SHARD: usize = 100;

/// xxhash64 with seed 0 (cespare/xxhash's `Sum64`), the ring's hash function.
pub fn hash(data: &[u8]) -> u64 {
    xxh64(data, 0)
}

/// A consistent-hash ring over a set of shard names (upstream's `consistenthash.Ring`).
///
/// Immutable once built: membership changes build a new ring, which is cheap
/// (100 hashes per shard and a sort).
#[derive(Clone, Debug, Default)]
pub struct HashRing {
    /// `(token, shard)` sorted by token. Equal tokens keep the later shard, as the Go
    /// map `tokenToNode` does.
    tokens: Vec<(u64, String)>,
}

impl HashRing {
    /// A ring of `shards` (order does not matter).
    pub fn new<S: AsRef<str>>(shards: impl IntoIterator<Item = S>) -> Self {
        let mut tokens = Vec::new();
        for shard in shards {
            let shard = shard.as_ref();
            for i in 0..TOKENS_PER_SHARD {
                tokens.push((hash(format!("{shard}-{i}").as_bytes()), shard.to_string()));
            }
        }
        // Stable sort, then keep the last of equal tokens (Go's map overwrite).
        tokens.sort_by_key(|(t, _)| *t);
        let mut dedup: Vec<(u64, String)> = Vec::with_capacity(tokens.len());
        for (t, s) in tokens {
            match dedup.last_mut() {
                Some(last) if last.0 == t => last.1 = s,
                _ => dedup.push((t, s)),
            }
        }
        Self { tokens: dedup }
    }

    /// Whether the ring has no shard.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The shard responsible for `key`, or `None` on an empty ring.
    pub fn shard_for(&self, key: &str) -> Option<&str> {
        if self.tokens.is_empty() {
            return None;
        }
        let h = hash(key.as_bytes());
        let i = self.tokens.partition_point(|(t, _)| *t < h);
        let i = if i == self.tokens.len() { 0 } else { i };
        Some(self.tokens[i].1.as_str())
    }
}

/// Why an object has no hash key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The object has no name: it uses `generateName`, and a main object's key cannot
    /// be computed before the API server names it.
    #[error(
        "generateName is not supported on ring resources that are not controlled by another resource"
    )]
    GenerateName,
    /// The object has neither a name nor a generateName.
    #[error("name must not be empty")]
    NoName,
    /// The controller reference misses its apiVersion, kind or name.
    #[error("controller reference is incomplete: {0}")]
    BadControllerRef(&'static str),
}

fn key(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    format!("{group}/{kind}/{namespace}/{name}")
}

/// The hash key of a main object of `group`/`kind` (upstream's `key.ForObject`):
/// `group/Kind/namespace/name` (namespace empty for cluster-scoped objects).
pub fn key_for_object(group: &str, kind: &str, meta: &ObjectMeta) -> Result<String, KeyError> {
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(key(
            group,
            kind,
            meta.namespace.as_deref().unwrap_or_default(),
            name,
        )),
        _ if meta.generate_name.as_deref().is_some_and(|g| !g.is_empty()) => {
            Err(KeyError::GenerateName)
        }
        _ => Err(KeyError::NoName),
    }
}

/// The hash key of a controlled object: its controller owner's key (upstream's
/// `key.ForController`); `Ok(None)` when it has no controller owner (not assigned).
pub fn key_for_controller(meta: &ObjectMeta) -> Result<Option<String>, KeyError> {
    let owner = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    let Some(owner) = owner else { return Ok(None) };
    if owner.api_version.is_empty() {
        return Err(KeyError::BadControllerRef("apiVersion must not be empty"));
    }
    if owner.kind.is_empty() {
        return Err(KeyError::BadControllerRef("kind must not be empty"));
    }
    if owner.name.is_empty() {
        return Err(KeyError::BadControllerRef("name must not be empty"));
    }
    // "v1" has the empty group; "apps/v1" has "apps".
    let group = owner.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    Ok(Some(key(
        group,
        &owner.kind,
        meta.namespace.as_deref().unwrap_or_default(),
        &owner.name,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second, naive implementation of upstream's algorithm: every token of every
    /// shard, the smallest one `>=` the key's hash, else the smallest overall.
    fn naive(shards: &[&str], key: &str) -> String {
        let h = hash(key.as_bytes());
        let mut all: Vec<(u64, &str)> = shards
            .iter()
            .flat_map(|s| {
                (0..TOKENS_PER_SHARD).map(move |i| (hash(format!("{s}-{i}").as_bytes()), *s))
            })
            .collect();
        all.sort_by_key(|(t, _)| *t);
        let pick = all.iter().find(|(t, _)| *t >= h).unwrap_or(&all[0]);
        pick.1.to_string()
    }

    #[test]
    fn xxhash64_matches_the_reference_values() {
        // The xxHash spec's values for seed 0 (also cespare/xxhash's test vectors).
        assert_eq!(hash(b""), 0xef46_db37_51d8_e999);
        assert_eq!(hash(b"a"), 0xd24e_c4f1_a98c_6e5b);
        assert_eq!(hash(b"as"), 0x1c33_0fb2_d66b_e179);
        assert_eq!(hash(b"asd"), 0x631c_37ce_72a9_7393);
        assert_eq!(hash(b"asdf"), 0x4158_72f5_99ce_a71e);
    }

    #[test]
    fn ring_agrees_with_the_naive_algorithm() {
        let shards = ["shard-a", "shard-b", "shard-c"];
        let ring = HashRing::new(shards);
        for i in 0..2000 {
            let key = format!("apps/Deployment/default/obj-{i}");
            assert_eq!(
                ring.shard_for(&key),
                Some(naive(&shards, &key).as_str()),
                "{key}"
            );
        }
        assert_eq!(HashRing::new(Vec::<String>::new()).shard_for("x"), None);
    }

    /// Pinned answers for shards `shard-0..2` (upstream's algorithm, checked against
    /// `naive` above): a Go sharder with these shards labels these keys the same way.
    #[test]
    fn ring_answers_the_pinned_vectors() {
        let ring = HashRing::new(["shard-0", "shard-1", "shard-2"]);
        let vectors = [
            (
                "example.com/AppService/default/web",
                0xa062_4a87_e877_c7e6,
                "shard-2",
            ),
            ("/ConfigMap/default/foo", 0x7339_3bb0_e2ae_31a8, "shard-0"),
            (
                "apps/Deployment/kube-system/coredns",
                0x3876_6fbf_7008_e123,
                "shard-2",
            ),
            (
                "webhosting.timebertt.dev/Website/project-foo/homepage",
                0x292e_e0a4_85f0_b9a2,
                "shard-0",
            ),
            ("/Secret//cluster-thing", 0xeeab_a784_5f29_a0d3, "shard-1"),
        ];
        for (key, h, shard) in vectors {
            assert_eq!(hash(key.as_bytes()), h, "{key}");
            assert_eq!(ring.shard_for(key), Some(shard), "{key}");
            assert_eq!(
                naive(&["shard-0", "shard-1", "shard-2"], key),
                shard,
                "{key}"
            );
        }
    }

    #[test]
    fn keys_are_upstreams() {
        let meta = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            ..Default::default()
        };
        assert_eq!(
            key_for_object("example.com", "AppService", &meta).as_deref(),
            Ok("example.com/AppService/prod/web")
        );
        let gen_name = ObjectMeta {
            generate_name: Some("web-".into()),
            ..Default::default()
        };
        assert_eq!(
            key_for_object("", "ConfigMap", &gen_name),
            Err(KeyError::GenerateName)
        );
        let owned = ObjectMeta {
            namespace: Some("prod".into()),
            owner_references: Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "example.com/v1".into(),
                    kind: "AppService".into(),
                    name: "web".into(),
                    controller: Some(true),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        assert_eq!(
            key_for_controller(&owned),
            Ok(Some("example.com/AppService/prod/web".into()))
        );
        assert_eq!(key_for_controller(&ObjectMeta::default()), Ok(None));
    }
}
