//! The `retrysim` binary: parses the command line and maps errors to exit
//! codes (0 success, 1 a check failed, 2 bad input).

fn main() {
    std::process::exit(retrysim::cli::main());
}
