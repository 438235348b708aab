//! The real `kubectl` against a ctrl-envtest, for the example's tests: each
//! [`Kubectl`] has its own kubeconfig, `HOME` and discovery cache, and every call a
//! timeout. [`found`] says whether kubectl is installed; when it is not, the tests
//! print a loud skip, and fail when `CI` is `true`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use ctrl_envtest::Environment;
use tokio::process::Command;

/// Whether kubectl is on `PATH`. Panics if it is not and `CI=true`; else prints a
/// loud skip notice.
pub fn found() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("kubectl").is_file()));
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl not found on PATH and CI=true: the kubectl tests must run in CI"
        );
        eprintln!("\n*** SKIPPED: kubectl not found (install kubectl to run this test) ***\n");
    }
    found
}

/// kubectl pointed at one environment.
pub struct Kubectl {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    /// kubectl for `env`, with a fresh kubeconfig and caches.
    pub fn new(env: &Environment) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        env.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Self { dir, kubeconfig }
    }

    /// kubectl with the kubeconfig at `kubeconfig` (written by someone else, e.g. a
    /// running example), and fresh caches.
    pub fn at(kubeconfig: &Path) -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
            kubeconfig: kubeconfig.to_path_buf(),
        }
    }

    /// Runs kubectl with `args` (60 s at most); returns (success, stdout, stderr).
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let child = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn kubectl");
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl output");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs kubectl, requires success, returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed:\n{stdout}{stderr}");
        stdout
    }
}

/// `p` as a `&str` (test paths are UTF-8).
pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
