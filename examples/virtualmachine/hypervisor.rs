//! A fake hypervisor in process: the system outside Kubernetes the controller
//! drives, as the article's controller drives a real one. It keeps servers by key
//! (`namespace/name`), creates, resizes, powers and deletes them, and reports a
//! usage that follows from their size and state. Tests hold a clone to see what the
//! controller did to it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use super::crd::{ResourceSpec, ResourceUsage};

/// The root disk of a server whose VirtualMachine names none.
pub const DEFAULT_ROOT_DISK: &str = "10G";

/// A server on the hypervisor.
#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    /// The hypervisor's id for it.
    pub id: String,
    /// Its resources.
    pub resource: ResourceSpec,
    /// Whether it is powered on.
    pub running: bool,
}

impl Server {
    /// `Running` or `Stopped`.
    pub fn state(&self) -> &'static str {
        if self.running { "Running" } else { "Stopped" }
    }

    /// What it uses: a stopped server nothing; a running one a share that shrinks as
    /// it gets more CPUs and memory (the same answer every time, so a status written
    /// from it is stable).
    pub fn usage(&self) -> ResourceUsage {
        if !self.running {
            return ResourceUsage::default();
        }
        // In percent, to one decimal place, as a hypervisor's dashboard shows it.
        let share = |n: f64, full: f64| ((full / n.max(1.0)).min(100.0) * 10.0).round() / 10.0;
        let mib = self.resource.memory_bytes() / (1024.0 * 1024.0);
        ResourceUsage {
            cpu: share(self.resource.cpus(), 80.0),
            memory: share(mib, 1024.0 * 50.0),
        }
    }
}

impl fmt::Display for Server {
    /// `vm-1a2b3c4d (2 CPU, 4G memory, 40G disk, Running)`: the quantities as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.resource;
        let disk = r
            .root_disk
            .as_ref()
            .map_or(DEFAULT_ROOT_DISK, |q| q.0.as_str());
        write!(
            f,
            "{} ({} CPU, {} memory, {disk} disk, {})",
            self.id,
            r.cpu.0,
            r.memory.0,
            self.state()
        )
    }
}

/// The hypervisor. Cheap to clone: clones share the servers.
#[derive(Clone, Debug, Default)]
pub struct Hypervisor {
    servers: Arc<Mutex<BTreeMap<String, Server>>>,
}

impl Hypervisor {
    /// An empty hypervisor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The server for `key`, if there is one.
    pub fn get(&self, key: &str) -> Option<Server> {
        self.servers.lock().get(key).cloned()
    }

    /// The keys of every server.
    pub fn keys(&self) -> Vec<String> {
        self.servers.lock().keys().cloned().collect()
    }

    /// Creates a server for `key` with `resource`, powered on if `running`.
    pub fn create(&self, key: &str, resource: ResourceSpec, running: bool) -> Server {
        let server = Server {
            id: format!("vm-{}", uuid_like(key)),
            resource,
            running,
        };
        self.servers.lock().insert(key.to_string(), server.clone());
        server
    }

    /// Sets the resources and power of `key`'s server; `None` if it does not exist.
    pub fn update(&self, key: &str, resource: ResourceSpec, running: bool) -> Option<Server> {
        let mut servers = self.servers.lock();
        let server = servers.get_mut(key)?;
        server.resource = resource;
        server.running = running;
        Some(server.clone())
    }

    /// Deletes `key`'s server; true if there was one.
    pub fn delete(&self, key: &str) -> bool {
        self.servers.lock().remove(key).is_some()
    }
}

/// A short stable id derived from `key` (FNV-1a), as a hypervisor's ids look.
fn uuid_like(key: &str) -> String {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{:08x}", hash as u32)
}
