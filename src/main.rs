/// Parsing a large snapshot allocates millions of small objects from several threads; mimalloc
/// makes that markedly faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(kubectl_sched::app::main(None));
}
