//! The search of a bisect, apart from what it measures: narrowing the candidate tensors in
//! rounds to the first one under the threshold, then walking back over that node's inputs, so
//! the search is tested on fake graphs without a runtime.

use anyhow::Result;

use super::probe::{Measured, Round};

/// Narrows `count` candidate tensors (topological order) in rounds of at most `max_outputs`
/// measured at once, evenly spaced, to the span where the cosine first falls below
/// `threshold`; every measurement is kept. `measure` gets candidate indexes and returns
/// (cosine, max abs error) per index, None where a tensor cannot be compared.
pub fn narrow(
    count: usize,
    max_outputs: usize,
    threshold: f64,
    measure: &mut impl FnMut(&[usize]) -> Round,
) -> Result<Measured> {
    let mut measured = Measured::new();
    let (mut lo, mut hi) = (0usize, count);
    loop {
        let span = hi - lo;
        let dense = span <= max_outputs;
        let picked: Vec<usize> = if dense {
            (lo..hi).collect()
        } else {
            (0..max_outputs)
                .map(|k| lo + k * (span - 1) / (max_outputs - 1))
                .collect()
        };
        for (&i, r) in picked.iter().zip(measure(&picked)?) {
            if let Some(r) = r {
                measured.insert(i, r);
            }
        }
        let first_bad = picked
            .iter()
            .copied()
            .find(|i| measured.get(i).is_some_and(|(c, _, _)| *c < threshold));
        match first_bad {
            _ if dense => return Ok(measured),
            None => return Ok(measured),
            Some(bad) => {
                let prev_good = picked.iter().copied().rfind(|i| *i < bad);
                let new_lo = prev_good.map_or(lo, |g| g + 1);
                if (new_lo, bad + 1) == (lo, hi) {
                    return Ok(measured);
                }
                (lo, hi) = (new_lo, bad + 1);
            }
        }
    }
}

/// Measures the inputs of the first divergent tensor's node until they are all known (at most
/// 16 steps back), so a divergence inherited from an input is not blamed on the operator.
pub fn walk_back(
    measured: &mut Measured,
    threshold: f64,
    inputs_of: impl Fn(usize) -> Vec<usize>,
    measure: &mut impl FnMut(&[usize]) -> Round,
) -> Result<()> {
    for _ in 0..16 {
        let Some(&bad) = measured
            .iter()
            .find(|(_, (c, _, _))| *c < threshold)
            .map(|(i, _)| i)
        else {
            return Ok(());
        };
        let missing: Vec<usize> = inputs_of(bad)
            .into_iter()
            .filter(|i| !measured.contains_key(i))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        for (&i, r) in missing.iter().zip(measure(&missing)?) {
            if let Some(r) = r {
                measured.insert(i, r);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake graph of `n` tensors whose cosine drops from `bad` on; counts the rounds.
    fn fake(bad: usize) -> impl FnMut(&[usize]) -> Round {
        move |picked: &[usize]| {
            Ok(picked
                .iter()
                .map(|&i| Some((if i >= bad { 0.5 } else { 1.0 }, 0.0, 0.0)))
                .collect())
        }
    }

    #[test]
    fn narrowing_finds_the_first_divergent_tensor_in_few_rounds() {
        let mut rounds = 0;
        let mut inner = fake(613);
        let mut measure = |p: &[usize]| {
            rounds += 1;
            assert!(p.len() <= 8, "a round exposes at most max_outputs tensors");
            inner(p)
        };
        let m = narrow(1000, 8, 0.9999, &mut measure).unwrap();
        let first = m.iter().find(|(_, (c, _, _))| *c < 0.9999).map(|(i, _)| *i);
        assert_eq!(first, Some(613));
        assert!(
            m.contains_key(&612),
            "the tensor just before is measured and fine"
        );
        assert!(
            rounds <= 6,
            "{rounds} rounds for 1000 tensors in rounds of 8"
        );
    }

    #[test]
    fn no_divergence_stops_after_one_sampled_round() {
        let mut rounds = 0;
        let mut inner = fake(usize::MAX);
        let mut measure = |p: &[usize]| {
            rounds += 1;
            inner(p)
        };
        let m = narrow(100, 10, 0.9999, &mut measure).unwrap();
        assert_eq!(rounds, 1);
        assert!(
            m.contains_key(&0) && m.contains_key(&99),
            "the ends are sampled"
        );
    }

    #[test]
    fn walking_back_measures_the_divergent_nodes_inputs() {
        let mut measured = Measured::from([(5, (0.5, 1.0, 0.5))]);
        let mut measure = fake(5);
        walk_back(
            &mut measured,
            0.9999,
            |i| if i == 5 { vec![2, 3] } else { vec![] },
            &mut measure,
        )
        .unwrap();
        assert_eq!(measured.get(&2), Some(&(1.0, 0.0, 0.0)));
        assert_eq!(measured.get(&3), Some(&(1.0, 0.0, 0.0)));
    }
}
