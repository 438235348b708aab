//! The `leader_election_master_status{name}` gauge (client-go's leader metrics
//! provider, as controller-runtime registers it): 1 while this process leads the
//! named lease, 0 while it stands by. Registered in `crate::metrics::registry()`.

use std::sync::OnceLock;

use prometheus::{IntGaugeVec, Opts};

fn gauge() -> &'static IntGaugeVec {
    static GAUGE: OnceLock<IntGaugeVec> = OnceLock::new();
    GAUGE.get_or_init(|| {
        let opts = Opts::new(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
        );
        let g = IntGaugeVec::new(opts, &["name"]).expect("static gauge options are valid");
        if let Err(error) = crate::metrics::registry().register(Box::new(g.clone())) {
            tracing::warn!(%error, "could not register leader_election_master_status");
        }
        g
    })
}

/// Marks `name` as led by this process.
pub(crate) fn leader_on(name: &str) {
    gauge().with_label_values(&[name]).set(1);
}

/// Marks `name` as on standby in this process.
pub(crate) fn leader_off(name: &str) {
    gauge().with_label_values(&[name]).set(0);
}

/// The gauge's current value for `name` (0 if never set).
pub fn master_status(name: &str) -> i64 {
    gauge().with_label_values(&[name]).get()
}
