//! Helpers shared by plugins (`framework/plugins/helper`).

use crate::framework::MAX_NODE_SCORE;

/// `DefaultNormalizeScore`: scales scores to 0..=100 by the highest; `reverse` flips them.
pub fn default_normalize_score(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        let v = MAX_NODE_SCORE * *s / max;
        *s = if reverse { MAX_NODE_SCORE - v } else { v };
    }
}

/// A point of a `RequestedToCapacityRatio` shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapePoint {
    pub utilization: i64,
    pub score: i64,
}

/// `BuildBrokenLinearFunction`.
pub fn broken_linear(shape: &[ShapePoint], p: i64) -> i64 {
    for (i, pt) in shape.iter().enumerate() {
        if p <= pt.utilization {
            if i == 0 {
                return shape[0].score;
            }
            let prev = shape[i - 1];
            return prev.score
                + (pt.score - prev.score) * (p - prev.utilization)
                    / (pt.utilization - prev.utilization);
        }
    }
    shape.last().map_or(0, |s| s.score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize() {
        let mut s = [0, 5, 10];
        default_normalize_score(&mut s, false);
        assert_eq!(s, [0, 50, 100]);
        let mut s = [0, 1, 2];
        default_normalize_score(&mut s, true);
        assert_eq!(s, [100, 50, 0]);
        let mut s = [0, 0];
        default_normalize_score(&mut s, true);
        assert_eq!(s, [100, 100]);
    }

    #[test]
    fn broken_linear_function() {
        let shape = [
            ShapePoint {
                utilization: 0,
                score: 0,
            },
            ShapePoint {
                utilization: 100,
                score: 100,
            },
        ];
        assert_eq!(broken_linear(&shape, 50), 50);
        assert_eq!(broken_linear(&shape, 150), 100);
    }
}
