//! The `ctrl-envtest` binary (`ctrl-envtest serve`): [`ctrl_envtest::cli::main`], which an
//! operator's project also runs from its already-built test dependency
//! (`cargo run --example envtest -- serve`).

#[tokio::main]
async fn main() -> std::process::ExitCode {
    ctrl_envtest::cli::main().await
}
