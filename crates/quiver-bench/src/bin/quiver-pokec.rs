//! Development binary: `quiver-pokec ARGS…` is `quiver bench pokec ARGS…`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(quiver_bench::pokec::run_cli(args));
}
