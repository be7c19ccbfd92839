//! `kubectl sched-explain`: kubectl finds plugins by file name, mapping `-` to `_`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc; // as kubectl-sched (src/main.rs)

fn main() {
    std::process::exit(kubectl_sched::app::main(Some("explain")));
}
