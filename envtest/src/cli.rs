//! `ctrl-envtest serve`: runs the embedded API server as a process, writes a kubeconfig and
//! prints the `kubectl` command to use, then serves until Ctrl-C. Handy for looking at what an
//! operator does with the real `kubectl`, or for running an operator binary against it.
//!
//! The top layer, above [`crate::sim`]: the `ctrl-envtest` binary is [`main`] alone, a library
//! function so that a project that already compiled ctrl-envtest for its tests runs the same
//! server with nothing more to build (`cargo ctrl init` writes `examples/envtest.rs`, run as
//! `cargo run --example envtest -- serve`), where `cargo install` would compile it all again.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// An in-process Kubernetes API server for tests and local runs: no etcd, no kube-apiserver.
#[derive(Debug, Parser)]
#[command(name = "ctrl-envtest", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API on 127.0.0.1 until Ctrl-C.
    ///
    /// Writes a kubeconfig (context `envtest`, namespace `default`) and prints the command
    /// to point kubectl at it, e.g. `kubectl --kubeconfig /tmp/x get ns`. Nothing is
    /// persisted: stopping the server forgets every object.
    Serve {
        /// Port to listen on (0 lets the OS choose).
        #[arg(long, short, default_value_t = 0)]
        port: u16,
        /// Where to write the kubeconfig (default: a file in the temp directory).
        #[arg(long, value_name = "FILE")]
        kubeconfig_out: Option<PathBuf>,
        /// Install the CRDs of this file or directory at start (repeatable).
        #[arg(long = "crd-dir", value_name = "DIR")]
        crd_dirs: Vec<PathBuf>,
        /// The admin's bearer token (written into the kubeconfig; default: a random one).
        /// Requests without a token the server knows get 401.
        #[arg(long, value_name = "T")]
        token: Option<String>,
        /// How requests are authorized: RBAC (Roles, ClusterRoles and their bindings; the
        /// admin is in system:masters) or AlwaysAllow (every authenticated request).
        #[arg(long, value_name = "MODE", default_value = "RBAC", value_parser = ["RBAC", "AlwaysAllow"])]
        authorization: String,
        /// Envtest parity: no garbage collector and no namespace finalization (deleted
        /// namespaces stay Terminating; orphan/foreground finalizers stay).
        #[arg(long)]
        no_gc: bool,
        /// Run the simulated kubelet: Pods are bound to the Node `envtest-node`, become
        /// Running and Ready after a short delay, and go after their grace period
        /// (containers stop within 1 s) when deleted.
        #[arg(long)]
        simulate_pods: bool,
        /// With --simulate-pods: how many Nodes the kubelet runs (envtest-node,
        /// envtest-node-2, ...).
        #[arg(long, value_name = "N", default_value_t = 1)]
        nodes: usize,
        /// With --simulate-pods: do not run the workload controllers (Deployments,
        /// ReplicaSets, Jobs; each namespace's default ServiceAccount and kube-root-ca.crt),
        /// which are on by default with the simulated kubelet.
        #[arg(long)]
        no_workloads: bool,
        /// Delay the delivery of every watch event by this many milliseconds (the lag of a
        /// loaded API server's watch cache; `Faults::delay_watch_delivery`).
        #[arg(long, value_name = "MS", default_value_t = 0)]
        watch_delay_ms: u64,
        /// Route webhook calls to a Service (a `clientConfig.service`, there being no
        /// cluster DNS) to where it is served: `NAMESPACE/NAME:PORT=HOST:PORT`, e.g.
        /// `op-system/op-webhook-service:443=127.0.0.1:9443` (repeatable). The TLS server
        /// name stays the Service's `NAME.NAMESPACE.svc`.
        #[arg(long = "service-route", value_name = "ROUTE", value_parser = parse_route)]
        service_routes: Vec<Route>,
    },
}

/// A `--service-route`: the Service's namespace, name and port, and where it is served.
#[derive(Clone, Debug)]
struct Route {
    namespace: String,
    name: String,
    port: u16,
    addr: std::net::SocketAddr,
}

fn parse_route(s: &str) -> Result<Route, String> {
    let err = || format!("{s:?}: want NAMESPACE/NAME:PORT=HOST:PORT");
    let (service, addr) = s.split_once('=').ok_or_else(err)?;
    let (namespace, rest) = service.split_once('/').ok_or_else(err)?;
    let (name, port) = rest.rsplit_once(':').ok_or_else(err)?;
    Ok(Route {
        namespace: namespace.to_string(),
        name: name.to_string(),
        port: port.parse().map_err(|_| err())?,
        addr: addr.parse().map_err(|_| err())?,
    })
}

/// `ctrl-envtest`'s command line from the process arguments: parses them (`--help`, errors
/// and `--version` exit as clap does) and runs the command until Ctrl-C; the process's exit code.
/// Call it from a `#[tokio::main]` (multi-threaded) `main`.
pub async fn main() -> std::process::ExitCode {
    let Cli { command } = Cli::parse();
    let Command::Serve {
        port,
        kubeconfig_out,
        crd_dirs,
        token,
        no_gc,
        simulate_pods,
        nodes,
        no_workloads,
        authorization,
        watch_delay_ms,
        service_routes,
    } = command;
    let authorization = match authorization.as_str() {
        "AlwaysAllow" => crate::Authorization::AlwaysAllow,
        _ => crate::Authorization::Rbac,
    };
    let mut b = crate::Environment::builder()
        .port(port)
        .controllers(!no_gc)
        .simulate_pods(simulate_pods)
        .simulate_workloads(simulate_pods && !no_workloads)
        .nodes(nodes)
        .authorization(authorization);
    for d in crd_dirs {
        b = b.crd_path(d);
    }
    for r in service_routes {
        b = b.service_route(&r.namespace, &r.name, r.port, r.addr);
    }
    if let Some(t) = token {
        b = b.bearer_token(t);
    }
    let env = match b.start().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ctrl-envtest: cannot start: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if watch_delay_ms > 0 {
        env.faults().delay_watch_delivery(
            crate::FaultMatch::any(),
            std::time::Duration::from_millis(watch_delay_ms),
        );
    }
    let path = kubeconfig_out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("ctrl-envtest-{}.kubeconfig", env.addr().port()))
    });
    if let Err(e) = env.write_kubeconfig(&path) {
        eprintln!("ctrl-envtest: cannot write {}: {e}", path.display());
        return std::process::ExitCode::FAILURE;
    }
    say(format_args!("ctrl-envtest serving {}", env.url()));
    say(format_args!("kubeconfig: {}", path.display()));
    say(format_args!(
        "try:        kubectl --kubeconfig {} get namespaces",
        path.display()
    ));
    say(format_args!(
        "or:         export KUBECONFIG={}",
        path.display()
    ));
    say(format_args!(
        "the kubeconfig is the admin (system:masters) over {}: kubectl sends tokens only over TLS",
        env.https_url()
    ));
    say(format_args!("Ctrl-C to stop."));
    let _ = tokio::signal::ctrl_c().await;
    env.stop();
    say(format_args!("stopped"));
    std::process::ExitCode::SUCCESS
}

/// Writes a line of `serve`'s banner to stdout, ignoring a closed stdout as Go's `fmt.Println`
/// does: the server outlives whoever read its first lines (`println!` panics on a broken pipe,
/// which ended the server when a test stopped reading at the `kubeconfig:` line).
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}
