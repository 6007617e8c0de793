use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::{ClockLeads, TOLERANCE_MS};

#[test]
fn the_fast_majority_leads_and_the_slow_nodes_do_not() {
    let now = Instant::now();
    let mut leads = ClockLeads::default();
    let offsets = [(0, 0.3), (1, -0.2), (2, 450.0), (3, 449.1), (4, 451.0)];
    assert_eq!(leads.leading(&offsets, now), vec![2, 3, 4]);
}

#[test]
fn a_node_restarted_behind_its_old_lead_does_not_lead_until_real_time_passes_it() {
    let t0 = Instant::now();
    let mut leads = ClockLeads::default();
    // Node 0 led by 30 ms, then came back at real time (a restart).
    leads.observe(30.0, t0);
    assert!(leads.leading(&[(0, 0.0)], t0).is_empty());
    // 31 ms later every reading it made is behind real time.
    let later = t0 + Duration::from_millis(31);
    assert_eq!(leads.leading(&[(0, 0.0)], later), vec![0]);
}

#[test]
fn a_strobe_step_holds_fence_loss_back_for_the_step() {
    let t0 = Instant::now();
    let mut leads = ClockLeads::default();
    leads.observe(20.0, t0); // a strobe's forward step, noted at its end
    let now = [(0, 0.0), (1, 0.1), (2, -0.1)];
    assert!(
        leads
            .leading(&now, t0 + Duration::from_millis(10))
            .is_empty()
    );
    assert_eq!(
        leads.leading(&now, t0 + Duration::from_millis(25)),
        vec![0, 1, 2]
    );
}

#[test]
fn clocks_far_ahead_still_lead() {
    // A fast clock's lead grows without bound in a long run; a restart
    // keeps it (the harness's fast clocks count from the cluster's start).
    let now = Instant::now();
    let mut leads = ClockLeads::default();
    assert_eq!(leads.leading(&[(0, 0.0), (1, 9_500.0)], now), vec![1]);
}

proptest! {
    /// Whatever was seen, a node named leading is at the mark within the
    /// tolerance, the mark is at least every offset seen at that instant,
    /// and the highest node of a sample leads.
    #[test]
    fn leading_nodes_are_at_the_decayed_mark(
        history in prop::collection::vec((0_u64..5_000, -50.0_f64..1_000.0), 0..20),
        offsets in prop::collection::vec(-50.0_f64..1_000.0, 1..7),
    ) {
        let t0 = Instant::now();
        let mut leads = ClockLeads::default();
        let mut at = t0;
        for (step, offset) in history {
            at += Duration::from_millis(step);
            leads.observe(offset, at);
        }
        let now = at + Duration::from_millis(1);
        let sample: Vec<(usize, f64)> = offsets.iter().copied().enumerate().collect();
        let chosen = leads.leading(&sample, now);
        let mark = leads.mark_at(now);
        for &(_, offset) in &sample {
            prop_assert!(mark >= offset);
        }
        for n in &chosen {
            prop_assert!(sample[*n].1 >= mark - TOLERANCE_MS);
        }
        let top = sample.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
        if top >= mark {
            prop_assert!(!chosen.is_empty());
        }
    }
}

proptest! {
    /// A leading majority is struck whole, with any of the others; a
    /// leading minority only in part, never beyond it.
    #[test]
    fn fence_loss_targets_keep_the_floor_sound(
        count in 1_usize..8,
        lead_mask in 0_u32..256,
        seed in 0_u64..1_000,
    ) {
        use rand::SeedableRng;
        let nodes: Vec<usize> = (0..count).collect();
        let leading: Vec<usize> = nodes.iter().copied().filter(|n| lead_mask & (1 << n) != 0).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let targets = super::fence_loss_targets(&mut rng, &leading, &nodes, count);
        prop_assert!(targets.windows(2).all(|w| w[0] < w[1]));
        if leading.len() > count / 2 {
            prop_assert!(leading.iter().all(|n| targets.contains(n)));
        } else {
            prop_assert!(targets.iter().all(|n| leading.contains(n)));
            prop_assert_eq!(targets.is_empty(), leading.is_empty());
        }
    }
}
