//! The duration of a component with no `[estimate]` in its model.toml, guessed from its size
//! so a small model's CI jobs get a timeout of their size instead of GitHub's 6 h. Both
//! figures are the slowest measured on 2 cores with the HTP emulated (docs/real-size.md):
//! per byte, vision (build 241 s + HTP parity 10 × 1,711 s for 0.81 GB: ~360 min per GB); for
//! a small graph, action_context (build 5 s + HTP parity 216 s for 0.01 GB: ~4 min whatever
//! its size). The sum of the two is a pessimistic guess for any graph of the family.

/// Minutes per GB of ONNX + external data (vision's measured build and HTP parity).
const MINUTES_PER_GB: f64 = 360.0;
/// Minutes any component takes whatever its size (action_context's build and HTP parity).
const FLOOR_MINUTES: f64 = 4.0;

/// Minutes of build and HTP parity for `w_gb` GB of ONNX, and the basis line that says so.
pub fn guess(w_gb: f64, setup_minutes: f64) -> (f64, String) {
    let minutes = setup_minutes + FLOOR_MINUTES + w_gb * MINUTES_PER_GB;
    let basis = format!(
        "duration ≈ {setup_minutes} min setup (assumed) + {FLOOR_MINUTES} min (action_context's measured build and HTP parity, the slowest small graph) + {w_gb:.3} GB × {MINUTES_PER_GB} min/GB (vision's measured build and HTP parity, the slowest per GB): a size-based guess, no [estimate] in model.toml"
    );
    (minutes, basis)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_small_graph_gets_minutes_a_large_one_hours() {
        let (tiny, basis) = super::guess(0.0001, 20.0);
        assert!((24.0..25.0).contains(&tiny), "{tiny}");
        assert!(basis.contains("size-based guess"), "{basis}");
        let (large, _) = super::guess(3.63, 20.0);
        assert!(large > 360.0, "{large}");
    }
}
