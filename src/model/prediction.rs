//! What a prediction reports: the raw formula value, a probability or a class,
//! with the semantics of the official C API's `SetPredictionType`.

use std::fmt;

use super::error::ShapeError;

c_enum! {
    /// The kind of value a prediction writes, as the official C API's
    /// `SetPredictionType`. Passed to the predict exports as a plain `int`,
    /// so an out-of-range number is an `InvalidArgument` result rather
    /// than undefined behaviour.
    pub enum PredictionType as "edgeguard_prediction_type" {
        /// `RawFormulaVal`: the sum of leaf values after `scale_and_bias`,
        /// one value per model dimension.
        Raw = 0 => "raw",
        /// Binary classifiers: `1 / (1 + exp(-raw))`, one value.
        /// MultiClass: softmax over the raw values, one value per class.
        Probability = 1 => "probability",
        /// Binary classifiers: `1.0` if `raw > 0` else `0.0` (the 0.5
        /// probability threshold). Multi-dimensional models: the index of
        /// the largest raw value (the first one on ties). Always one value;
        /// it is the class *index*, not the training label.
        Class = 2 => "class",
    }
}

impl PredictionType {
    /// Parses `raw`, `probability` or `class` (the CLI's spelling).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "raw" | "RawFormulaVal" => Some(Self::Raw),
            "probability" | "Probability" => Some(Self::Probability),
            "class" | "Class" => Some(Self::Class),
            _ => None,
        }
    }

    /// The CLI's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::Probability => "probability",
            Self::Class => "class",
        }
    }
}

impl fmt::Display for PredictionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the model was trained for, as far as prediction types care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Objective {
    /// Logloss / CrossEntropy.
    Binary,
    /// MultiClass (softmax).
    MultiClass,
    /// MultiClassOneVsAll: classes are independent, softmax would be wrong.
    OneVsAll,
    /// A loss where probability and class mean nothing (RMSE, ranking...).
    Other(String),
    /// The model does not say (no `model_info.params.loss_function`): follow
    /// the C API, which decides by dimension alone.
    Unknown,
}

impl Objective {
    pub(crate) fn from_loss(name: Option<&str>) -> Self {
        match name {
            None => Self::Unknown,
            Some("Logloss" | "CrossEntropy") => Self::Binary,
            Some("MultiClass") => Self::MultiClass,
            Some("MultiClassOneVsAll") => Self::OneVsAll,
            Some(other) => Self::Other(other.to_owned()),
        }
    }

    pub(crate) fn supports(&self, ty: PredictionType, dimension: usize) -> bool {
        match (ty, self) {
            (PredictionType::Raw, _) => true,
            (_, Self::Binary) => dimension == 1,
            (_, Self::MultiClass) => dimension > 1,
            (PredictionType::Class, Self::OneVsAll) => dimension > 1,
            (_, Self::OneVsAll | Self::Other(_)) => false,
            (_, Self::Unknown) => true,
        }
    }

    pub(crate) fn describe(&self) -> &str {
        match self {
            Self::Binary => "binary classification",
            Self::MultiClass => "MultiClass",
            Self::OneVsAll => "MultiClassOneVsAll",
            Self::Other(loss) => loss,
            Self::Unknown => "unknown objective",
        }
    }
}

/// Why [`crate::model::Model::predict`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictionError {
    /// Wrong feature counts or a short output slice.
    Input(ShapeError),
    /// The model's objective gives this prediction type no meaning (for
    /// example a probability from an RMSE regression).
    Unsupported(PredictionType),
}

impl fmt::Display for PredictionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Input(e) => e.fmt(f),
            Self::Unsupported(ty) => {
                write!(f, "prediction type {ty} is not meaningful for this model")
            }
        }
    }
}

impl std::error::Error for PredictionError {}

impl From<ShapeError> for PredictionError {
    fn from(e: ShapeError) -> Self {
        Self::Input(e)
    }
}

/// How many values a prediction of type `ty` writes for a model of `dimension`.
pub fn output_len(ty: PredictionType, dimension: usize) -> usize {
    match ty {
        PredictionType::Class => 1,
        PredictionType::Raw | PredictionType::Probability => dimension,
    }
}

/// Turns raw values into `ty` in place; for [`PredictionType::Class`] the
/// result is in `values[0]`. The C API semantics: sigmoid / `raw > 0` for one
/// dimension, softmax / argmax for several. Used by every backend so they all
/// report the same thing.
pub fn apply_prediction_type(ty: PredictionType, values: &mut [f64]) {
    match (ty, values.len()) {
        (PredictionType::Raw, _) | (_, 0) => {}
        (PredictionType::Probability, 1) => values[0] = 1.0 / (1.0 + (-values[0]).exp()),
        (PredictionType::Class, 1) => values[0] = if values[0] > 0.0 { 1.0 } else { 0.0 },
        (PredictionType::Probability, _) => {
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for v in values.iter_mut() {
                *v = (*v - max).exp();
                sum += *v;
            }
            for v in values.iter_mut() {
                *v /= sum;
            }
        }
        (PredictionType::Class, _) => {
            let mut best = 0;
            for (i, &v) in values.iter().enumerate() {
                if v > values[best] {
                    best = i;
                }
            }
            values[0] = best as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dimension_is_sigmoid_and_sign() {
        let mut v = [0.0];
        apply_prediction_type(PredictionType::Probability, &mut v);
        assert_eq!(v[0], 0.5);
        let mut v = [2.0];
        apply_prediction_type(PredictionType::Probability, &mut v);
        assert!((v[0] - 1.0 / (1.0 + (-2.0f64).exp())).abs() < 1e-15);
        for (raw, class) in [(0.0, 0.0), (1e-300, 1.0), (-3.0, 0.0)] {
            let mut v = [raw];
            apply_prediction_type(PredictionType::Class, &mut v);
            assert_eq!(v[0], class);
        }
    }

    #[test]
    fn several_dimensions_are_softmax_and_first_argmax() {
        let mut v = [1.0, 3.0, 3.0];
        apply_prediction_type(PredictionType::Class, &mut v);
        assert_eq!(v[0], 1.0);
        let mut v = [1.0, 2.0, 3.0];
        apply_prediction_type(PredictionType::Probability, &mut v);
        let z: f64 = [1.0f64, 2.0, 3.0].iter().map(|x| x.exp()).sum();
        assert!((v[2] - 3.0f64.exp() / z).abs() < 1e-15);
        assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn objectives_refuse_meaningless_types() {
        let rmse = Objective::from_loss(Some("RMSE"));
        assert!(rmse.supports(PredictionType::Raw, 1));
        assert!(!rmse.supports(PredictionType::Probability, 1));
        assert!(!rmse.supports(PredictionType::Class, 1));
        assert!(Objective::Binary.supports(PredictionType::Class, 1));
        assert!(Objective::MultiClass.supports(PredictionType::Probability, 3));
        assert!(!Objective::OneVsAll.supports(PredictionType::Probability, 3));
        assert!(Objective::Unknown.supports(PredictionType::Probability, 1));
    }
}
