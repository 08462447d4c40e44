//! Development binary: `quiver-bench ARGS…` is `quiver bench ARGS…`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(quiver_bench::run_cli(args));
}
