//! The AVX2 and AVX-512 tree kernels against the scalar one: bit-identical raw values
//! (every output dimension, compared as bits) on every fixture model, the
//! shipped models, the scorer fixtures and the bench models, over their
//! documents and over random documents built to reach the models' buckets
//! and borders (values and categorical hashes taken from the fixture
//! documents and mixed across them, NaN, infinities, random bits).
//!
//! On a CPU without AVX2 (or AVX-512) the wider kernel runs a narrower one;
//! the test then says so and still checks that the kernels match
//! `predict_raw`.
//!
//! Model groups ([`ModelGroup`]: several models' conditions merged and
//! computed once) against each member alone, with every kernel: the same
//! model twice on the same inputs (everything shared), on shuffled inputs
//! (nothing shared), the shipped models bound by name as the scorer binds
//! them, and every one-dimensional model at once.

#[path = "official_support/mod.rs"]
mod official_support;

use std::path::Path;

use edgeguard::model::{cat_hash, Evaluator, GroupInput, Kernel, Model, ModelGroup};

fn root(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// A document as the evaluator takes it: floats and categorical hashes.
type Doc = (Vec<f32>, Vec<i32>);

/// `(name, model, documents)` for every model we ship or test with; models
/// without documents of their own get none (random documents only).
fn models() -> Vec<(String, Model, Vec<Doc>)> {
    let mut all = Vec::new();
    for case in official_support::cases() {
        let model = Model::load(&case.json).unwrap_or_else(|e| panic!("{e}"));
        let docs = official_support::read_docs(&case.docs)
            .into_iter()
            .map(|d| {
                let hashes = d
                    .cats
                    .iter()
                    .map(|s| cat_hash(s.as_bytes()) as i32)
                    .collect();
                (d.floats, hashes)
            })
            .collect();
        all.push((case.name, model, docs));
    }
    for path in [
        "models/bot.json",
        "models/spoof.json",
        "tests/fixtures/scorer/reordered.json",
        "tests/fixtures/scorer/regression.json",
    ] {
        let model = Model::load(&root(path)).unwrap_or_else(|e| panic!("{e}"));
        all.push((path.to_owned(), model, Vec::new()));
    }
    all
}

fn raw(model: &Model, kernel: Kernel, floats: &[f32], cats: &[i32]) -> Vec<u64> {
    let mut out = vec![0.0; model.dimension()];
    model
        .predict_raw_with(kernel, floats, cats, &mut out)
        .expect("shape is right");
    out.iter().map(|v| v.to_bits()).collect()
}

/// A random document: each value from a random fixture document of the same
/// model (so buckets and borders are reached), or a special or random value.
fn random_doc(
    rng: &mut fastrand::Rng,
    model: &Model,
    docs: &[(Vec<f32>, Vec<i32>)],
) -> (Vec<f32>, Vec<i32>) {
    let floats = (0..model.float_feature_count())
        .map(|i| match rng.usize(..8) {
            0 => f32::NAN,
            1 => [f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0][rng.usize(..4)],
            2 => f32::from_bits(rng.u64(..) as u32),
            3 => (rng.u64(..2000)) as f32 / 10.0 - 100.0,
            _ if !docs.is_empty() => docs[rng.usize(..docs.len())].0[i],
            _ => (rng.u64(..64)) as f32,
        })
        .collect();
    let cats = (0..model.cat_feature_count())
        .map(|i| match rng.usize(..4) {
            0 => rng.u64(..) as i32,
            1 => cat_hash(&[b'a' + rng.usize(..4) as u8]) as i32,
            _ if !docs.is_empty() => docs[rng.usize(..docs.len())].1[i],
            _ => cat_hash(b"") as i32,
        })
        .collect();
    (floats, cats)
}

#[test]
fn avx2_and_scalar_kernels_give_the_same_bits() {
    for kernel in [Kernel::Avx2, Kernel::Avx512] {
        if !kernel.is_available() {
            eprintln!("this CPU has no {kernel}: that kernel runs a narrower one here");
        }
    }
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for (name, model, docs) in models() {
        let randoms: Vec<_> = (0..300)
            .map(|_| random_doc(&mut rng, &model, &docs))
            .collect();
        for (i, (floats, cats)) in docs.iter().chain(&randoms).enumerate() {
            let scalar = raw(&model, Kernel::Scalar, floats, cats);
            for kernel in [Kernel::Avx2, Kernel::Avx512] {
                let vector = raw(&model, kernel, floats, cats);
                assert_eq!(
                    scalar, vector,
                    "{name}: {kernel}: document {i}: {floats:?} {cats:?}"
                );
            }
            let mut detected = vec![0.0; model.dimension()];
            model.predict_raw(floats, cats, &mut detected).unwrap();
            let detected: Vec<u64> = detected.iter().map(|v| v.to_bits()).collect();
            assert_eq!(detected, scalar, "{name}: document {i}: predict_raw");
            checked += 1;
        }
    }
    assert!(checked > 3000, "{checked} documents");
}

#[test]
fn kernel_detection_is_consistent() {
    assert!(Kernel::Scalar.is_available());
    let k = Kernel::detect();
    assert!(k.is_available());
    assert_eq!(k == Kernel::Scalar, !Kernel::Avx2.is_available());
    assert_eq!(k == Kernel::Avx512, Kernel::Avx512.is_available());
    assert!(!Kernel::Avx512.is_available() || Kernel::Avx2.is_available());
    // The shipped models and the 1000-tree bench model (about 2 400
    // conditions) fit the AVX-512 kernel; the MultiClass fixture (several
    // dimensions) does not.
    let bot = Model::load(&root("models/bot.json")).unwrap();
    let bench = Model::load(&root("benches/data/model-bench.json")).unwrap();
    let multiclass = Model::load(&root("tests/fixtures/catboost/multiclass_cat.json")).unwrap();
    assert_eq!(bot.kernel(), k);
    assert_eq!(bench.kernel(), k);
    assert_eq!(multiclass.kernel(), k.min(Kernel::Avx2));
    assert_eq!(Kernel::Scalar.to_string(), "scalar");
    assert_eq!(Kernel::Avx2.to_string(), "avx2");
    assert_eq!(Kernel::Avx512.to_string(), "avx512");
}

/// A member of a test group: name, model, its documents, and its float
/// and categorical input positions.
type Member<'a> = (&'a str, &'a Model, &'a [Doc], Vec<usize>, Vec<usize>);

/// A group's members with their input positions, and the input array sizes.
struct Grouping<'a> {
    members: Vec<Member<'a>>,
    floats: usize,
    cats: usize,
}

impl<'a> Grouping<'a> {
    fn new() -> Self {
        Grouping {
            members: Vec::new(),
            floats: 0,
            cats: 0,
        }
    }

    /// Adds a member whose inputs are at `floats` / `cats` of the group's
    /// arrays (which grow to hold them).
    fn add(
        &mut self,
        name: &'a str,
        model: &'a Model,
        docs: &'a [Doc],
        floats: Vec<usize>,
        cats: Vec<usize>,
    ) {
        self.floats = self
            .floats
            .max(floats.iter().map(|f| f + 1).max().unwrap_or(0));
        self.cats = self.cats.max(cats.iter().map(|c| c + 1).max().unwrap_or(0));
        self.members.push((name, model, docs, floats, cats));
    }

    fn build(&self) -> ModelGroup {
        let inputs: Vec<GroupInput<'_>> = self
            .members
            .iter()
            .map(|(_, model, _, floats, cats)| GroupInput {
                model,
                floats,
                cats,
            })
            .collect();
        ModelGroup::build(&inputs, self.floats, self.cats).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Group inputs from random documents of the members: each member's
    /// document is written at its positions, later members overwriting
    /// shared positions; unset positions get random values.
    fn random_inputs(&self, rng: &mut fastrand::Rng) -> (Vec<f32>, Vec<i32>) {
        let mut floats: Vec<f32> = (0..self.floats).map(|_| rng.u64(..100) as f32).collect();
        let mut cats: Vec<i32> = (0..self.cats).map(|_| rng.u64(..) as i32).collect();
        for (_, model, docs, fp, cp) in &self.members {
            let (f, c) = random_doc(rng, model, docs);
            for (&p, v) in fp.iter().zip(f) {
                floats[p] = v;
            }
            for (&p, v) in cp.iter().zip(c) {
                cats[p] = v;
            }
        }
        (floats, cats)
    }

    /// Every member's raw value from the group equals the model's alone on
    /// the inputs at its positions, as bits, with every kernel.
    fn check(&self, label: &str, rng: &mut fastrand::Rng, documents: usize) {
        let group = self.build();
        assert_eq!(group.len(), self.members.len());
        for d in 0..documents {
            let (floats, cats) = self.random_inputs(rng);
            for kernel in [Kernel::Scalar, Kernel::Avx2, Kernel::Avx512] {
                let mut out = vec![0.0; group.len()];
                group
                    .predict_raw_with(kernel, &floats, &cats, &mut out)
                    .expect("shapes are right");
                for (i, (name, model, _, fp, cp)) in self.members.iter().enumerate() {
                    let own_floats: Vec<f32> = fp.iter().map(|&p| floats[p]).collect();
                    let own_cats: Vec<i32> = cp.iter().map(|&p| cats[p]).collect();
                    assert_eq!(
                        vec![out[i].to_bits()],
                        raw(model, kernel, &own_floats, &own_cats),
                        "{label}: member {i} ({name}), {kernel}, document {d}"
                    );
                }
            }
        }
    }
}

fn identity(n: usize) -> Vec<usize> {
    (0..n).collect()
}

fn shuffled(rng: &mut fastrand::Rng, n: usize, offset: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (offset..offset + n).collect();
    rng.shuffle(&mut p);
    p
}

#[test]
fn groups_score_each_member_as_it_scores_alone() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0f9a);
    let all = models();
    let one_dimensional: Vec<_> = all.iter().filter(|(_, m, _)| m.dimension() == 1).collect();
    assert!(
        one_dimensional.len() >= 8,
        "{} models",
        one_dimensional.len()
    );
    for (name, model, docs) in &one_dimensional {
        let (f, c) = (model.float_feature_count(), model.cat_feature_count());
        // Alone; twice on the same inputs; twice with the second's inputs
        // shuffled into positions of their own; twice with the inputs
        // shuffled among the same positions (the same questions asked of
        // other inputs).
        let mut alone = Grouping::new();
        alone.add(name, model, docs, identity(f), identity(c));
        alone.check(&format!("{name} alone"), &mut rng, 60);

        let mut same = Grouping::new();
        same.add(name, model, docs, identity(f), identity(c));
        same.add(name, model, docs, identity(f), identity(c));
        same.check(&format!("{name} twice"), &mut rng, 60);
        let group = same.build();
        // Not more than alone: conditions are merged by their answers, and
        // some models ask one question twice (two CTRs of one projection
        // that agree on every bucket), which a group asks once.
        assert!(
            group.condition_bits() <= model.condition_bits(),
            "{name}: a model grouped with itself shares every condition: {} against {}",
            group.condition_bits(),
            model.condition_bits()
        );

        let mut apart = Grouping::new();
        apart.add(name, model, docs, identity(f), identity(c));
        apart.add(
            name,
            model,
            docs,
            shuffled(&mut rng, f, f),
            shuffled(&mut rng, c, c),
        );
        apart.check(&format!("{name} apart"), &mut rng, 60);

        let mut crossed = Grouping::new();
        crossed.add(name, model, docs, identity(f), identity(c));
        crossed.add(
            name,
            model,
            docs,
            shuffled(&mut rng, f, 0),
            shuffled(&mut rng, c, 0),
        );
        crossed.add(name, model, docs, identity(f), identity(c));
        crossed.check(&format!("{name} crossed"), &mut rng, 60);
    }

    // Every one-dimensional model at once, inputs overlapping: the first
    // few positions of each array are shared by all.
    let mut everyone = Grouping::new();
    for (name, model, docs) in &one_dimensional {
        let (f, c) = (model.float_feature_count(), model.cat_feature_count());
        let fp = (0..f)
            .map(|i| if i < 3 { i } else { everyone.floats.max(3) + i })
            .collect();
        let cp = (0..c)
            .map(|i| if i < 2 { i } else { everyone.cats.max(2) + i })
            .collect();
        everyone.add(name, model, docs, fp, cp);
    }
    everyone.check("every model", &mut rng, 200);
}

#[test]
fn the_shipped_models_grouped_by_name_share_their_conditions() {
    let bot = Model::load(&root("models/bot.json")).unwrap();
    let spoof = Model::load(&root("models/spoof.json")).unwrap();
    // Positions by feature name, as the scorer binds them.
    let by_name = |names: &[String], into: &mut Vec<String>| -> Vec<usize> {
        names
            .iter()
            .map(|n| match into.iter().position(|m| m == n) {
                Some(p) => p,
                None => {
                    into.push(n.clone());
                    into.len() - 1
                }
            })
            .collect()
    };
    let (mut floats, mut cats) = (Vec::new(), Vec::new());
    let bot_f = by_name(bot.float_feature_names(), &mut floats);
    let bot_c = by_name(bot.cat_feature_names(), &mut cats);
    let spoof_f = by_name(spoof.float_feature_names(), &mut floats);
    let spoof_c = by_name(spoof.cat_feature_names(), &mut cats);
    let mut grouping = Grouping::new();
    grouping.add("bot", &bot, &[], bot_f, bot_c);
    grouping.add("spoof", &spoof, &[], spoof_f, spoof_c);
    let group = grouping.build();
    // They were trained on the same data: besides float borders, Counter
    // CTRs (counts of values, not of labels) ask the same questions.
    let alone = bot.condition_bits() + spoof.condition_bits();
    assert!(
        group.condition_bits() < alone,
        "merged {} conditions, {alone} alone",
        group.condition_bits()
    );
    let mut rng = fastrand::Rng::with_seed(7);
    grouping.check("shipped", &mut rng, 400);
}

#[test]
fn groups_refuse_what_they_cannot_score() {
    let bot = Model::load(&root("models/bot.json")).unwrap();
    let multiclass = Model::load(&root("tests/fixtures/catboost/multiclass_cat.json")).unwrap();
    let (f, c) = (bot.float_feature_count(), bot.cat_feature_count());
    let (fp, cp) = (identity(f), identity(c));
    let member = |model| GroupInput {
        model,
        floats: &fp,
        cats: &cp,
    };
    let err = |inputs: &[GroupInput<'_>], floats, cats| {
        ModelGroup::build(inputs, floats, cats).expect_err("refused")
    };
    let mf = identity(multiclass.float_feature_count());
    let mc = identity(multiclass.cat_feature_count());
    let several = GroupInput {
        model: &multiclass,
        floats: &mf,
        cats: &mc,
    };
    assert!(err(&[member(&bot), several], f.max(mf.len()), c.max(mc.len())).contains("dimensions"));
    assert!(err(&[member(&bot)], f - 1, c).contains("out of range"));
    assert!(err(&[member(&bot)], f, c - 1).contains("out of range"));
    let short = &fp[1..];
    let wrong = GroupInput {
        model: &bot,
        floats: short,
        cats: &cp,
    };
    assert!(err(&[wrong], f, c).contains("do not match"));

    let group = ModelGroup::build(&[member(&bot)], f, c).unwrap();
    let (floats, cats) = (vec![0.0; f], vec![0; c]);
    let mut out = [0.0; 1];
    assert!(group.predict_raw(&floats[1..], &cats, &mut out).is_err());
    assert!(group.predict_raw(&floats, &cats[1..], &mut out).is_err());
    assert!(group.predict_raw(&floats, &cats, &mut []).is_err());
    // A longer output is fine; what lies past the members stays.
    let mut longer = [7.0; 2];
    group.predict_raw(&floats, &cats, &mut longer).unwrap();
    assert_eq!(longer[1], 7.0);
    group.predict_raw(&floats, &cats, &mut out).unwrap();
    let mut alone = [0.0; 1];
    bot.predict_raw(&floats, &cats, &mut alone).unwrap();
    assert_eq!(out[0].to_bits(), alone[0].to_bits());
}
