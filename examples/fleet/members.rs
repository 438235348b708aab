//! The local fleet: with no cluster configured the hub is the contract's in-process
//! API server, and this starts three member API servers beside it (ctrl-envtest, in
//! process), writes a kubeconfig for each and registers each on the hub as a
//! kubeconfig Secret, the way a platform team registers a real member:
//! multicluster-runtime's label and key, the cluster named after the Secret.

use std::path::{Path, PathBuf};

use ctrl::multicluster::{DEFAULT_KUBECONFIG_SECRET_KEY, DEFAULT_KUBECONFIG_SECRET_LABEL};
use ctrl_envtest::Environment;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};

/// The local members: name and the `env` label of its Secret.
pub const MEMBERS: [(&str, &str); 3] = [
    ("member-1", "dev"),
    ("member-2", "prod"),
    ("member-3", "staging"),
];

/// A running member: its server and where its kubeconfig is.
pub struct Member {
    /// The member's name (its Secret's).
    pub name: String,
    /// The API server.
    pub env: Environment,
    /// Its kubeconfig, for kubectl.
    pub kubeconfig: PathBuf,
}

/// Starts the members, writes their kubeconfigs next to `hub_kubeconfig` and registers
/// them on `hub` in `namespace`.
pub async fn start(
    hub: &kube::Client,
    hub_kubeconfig: &Path,
    namespace: &str,
) -> Result<Vec<Member>, Box<dyn std::error::Error + Send + Sync>> {
    let dir = hub_kubeconfig
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let mut members = Vec::new();
    for (name, env_label) in MEMBERS {
        let env = Environment::start().await?;
        let kubeconfig = dir.join(format!("fleet-{name}.kubeconfig"));
        env.write_kubeconfig(&kubeconfig)?;
        tracing::info!(
            "member {name} (env={env_label}) at {}; use it with: kubectl --kubeconfig {}",
            env.url(),
            kubeconfig.display()
        );
        register(
            hub,
            namespace,
            name,
            env_label,
            &std::fs::read(&kubeconfig)?,
        )
        .await?;
        members.push(Member {
            name: name.into(),
            env,
            kubeconfig,
        });
    }
    Ok(members)
}

/// Creates the kubeconfig Secret `namespace/name` on the hub.
async fn register(
    hub: &kube::Client,
    namespace: &str,
    name: &str,
    env_label: &str,
    kubeconfig: &[u8],
) -> Result<(), kube::Error> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                [
                    (
                        DEFAULT_KUBECONFIG_SECRET_LABEL.to_string(),
                        "true".to_string(),
                    ),
                    ("env".to_string(), env_label.to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        data: Some(
            [(
                DEFAULT_KUBECONFIG_SECRET_KEY.to_string(),
                ByteString(kubeconfig.to_vec()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    let api: Api<Secret> = Api::namespaced(hub.clone(), namespace);
    api.create(&PostParams::default(), &secret).await?;
    Ok(())
}
