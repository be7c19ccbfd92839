fn main() {
    std::process::exit(kubectl_sched::app::main(None));
}
