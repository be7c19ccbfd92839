//! `kubectl sched-whatif <TAB>`: kubectl runs this with the words after the plugin's name; the
//! plugin binary beside it answers.
fn main() {
    std::process::exit(kubectl_sched::app::delegate_to_plugin("whatif"));
}
