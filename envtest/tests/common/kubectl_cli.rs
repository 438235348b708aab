//! Runs the real `kubectl` against an environment, for tests outside `kubectl.rs`: its own
//! kubeconfig, `HOME` and discovery cache in a temp dir, a 60 s timeout. A missing kubectl
//! skips loudly — and fails when `CI` is set. Include it with
//! `#[path = "common/kubectl_cli.rs"] mod kubectl_cli;`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use ctrl_envtest::Environment;

/// What one kubectl call printed.
#[derive(Debug)]
pub struct Out {
    /// Exit status 0.
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// A kubectl session on `env`; `None` (said loudly) when kubectl is missing.
pub struct Kubectl {
    bin: PathBuf,
    dir: tempfile::TempDir,
}

impl Kubectl {
    pub fn new(env: &Environment) -> Option<Kubectl> {
        let bin = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("kubectl"))
                .find(|k| k.is_file())
        });
        let Some(bin) = bin else {
            assert!(
                std::env::var_os("CI").is_none(),
                "kubectl not found on PATH, and CI is set"
            );
            eprintln!("\n*** SKIPPED: kubectl not found (install kubectl to run this test) ***\n");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        env.write_kubeconfig(dir.path().join("kubeconfig"))
            .expect("kubeconfig");
        Some(Kubectl { bin, dir })
    }

    /// Writes `text` to a file in the session's dir; its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// Runs kubectl with `args`.
    pub async fn run(&self, args: &[&str]) -> Out {
        let out = tokio::process::Command::new(&self.bin)
            .args(args)
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("HOME", self.dir.path())
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), out)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl ran");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}
