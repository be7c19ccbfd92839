//! `kubectl sched-lease`: kubectl finds plugins by file name, mapping `-` to `_`.
fn main() {
    std::process::exit(kubectl_sched::app::main(Some("lease")));
}
