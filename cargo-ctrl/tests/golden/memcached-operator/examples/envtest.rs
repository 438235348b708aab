//! `cargo run --example envtest -- serve [--simulate-pods] [--port 6443] [--kubeconfig-out F]`:
//! the API server `ctrl-envtest serve` runs, from the ctrl-envtest this project's tests already
//! compiled (nothing more to build; `cargo install ctrl-envtest` would compile it all again).
//! Apply `config/default` to it with kubectl and run the operator against it
//! (`cargo run -- --kubeconfig <the file it prints>`).

#[tokio::main]
async fn main() -> std::process::ExitCode {
    ctrl::envtest::cli::main().await
}
