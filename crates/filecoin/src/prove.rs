//! The partition loop every proof kind shares: partitions are built and synthesised on threads
//! of their own, as far ahead of the prover as it allows ([`PartitionProver::ahead`]), while the
//! parameters are read and checked on the loop's thread; each partition that fits the parameters
//! and holds is submitted to the caller's prover; every proof the prover hands back is verified
//! against the public inputs the verifier uses, and the proofs' bytes are concatenated in
//! partition order.
//!
//! A prover may prove partitions asynchronously ([`PartitionProver::submit`] returns before the
//! proof exists, [`PartitionProver::finish`] waits for the rest), so several partitions prove
//! elsewhere while the next ones are synthesised; by default it proves each partition as it is
//! submitted ([`PartitionProver::prove`]), while the next one is synthesised.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuzk_groth16::{
    prepare_verifying_key, synthesize_with_capacity, verify_proof, Ahead, Capacity, CircuitShape,
    Parameters, PreparedVerifyingKey, Proof,
};
use cuzk_pce::PartitionInput;

use crate::error::FilecoinError;
use crate::params::ParamFiles;

/// Bytes of one partition's Groth16 proof.
pub const PROOF_BYTES: usize = 192;

/// The error a prover returns: the loop reports it as [`FilecoinError::Prover`].
pub type ProverError = Box<dyn std::error::Error + Send + Sync>;

/// Proofs a prover hands back, each with the index of its partition, in any order.
pub type Proven = Vec<(usize, Proof)>;

/// cuzk's Groth16 prover, as this crate needs it: one partition's input in (a full assignment,
/// or a pre-compiled circuit's witness when [`PartitionProver::pre_compiled`] offers one), its
/// proof out.
/// The caller picks `r` and `s` (random in production, fixed in tests), and may keep parameters
/// resident between jobs by overriding [`PartitionProver::parameters`].
///
/// A prover that proves one partition at a time implements [`PartitionProver::prove`] alone. One
/// that proves several at once (on other workers or devices) overrides
/// [`PartitionProver::submit`], [`PartitionProver::finish`] and [`PartitionProver::abandon`]:
/// the loop then synthesises the next partition while the submitted ones prove.
pub trait PartitionProver {
    /// The parameters of the circuit `files` names. By default they are read from disk with
    /// their verifying key, which must be the parameter file's; a long-lived service overrides
    /// this to hand out parameters it keeps in memory.
    fn parameters(&mut self, files: &ParamFiles) -> Result<Arc<Parameters>, FilecoinError> {
        read_checked(files).map(Arc::new)
    }

    /// A pre-compiled form (cuzk-pce) of the circuit `files` names, to synthesise partitions
    /// from their witness alone: they are then submitted as [`PartitionInput::Witness`], whose
    /// a, b, c the prover makes. `record` records the circuit when the caller has none yet.
    /// By default there is none, and every partition is synthesised in full
    /// ([`PartitionInput::Assignment`]).
    fn pre_compiled(
        &mut self,
        files: &ParamFiles,
        record: &mut dyn FnMut() -> Result<cuzk_pce::Recording, FilecoinError>,
    ) -> Result<Option<Arc<cuzk_pce::PreCompiled>>, FilecoinError> {
        let _ = (files, record);
        Ok(None)
    }

    /// How far synthesis may run ahead of this prover, for partitions of `files`' circuit of
    /// `capacity` ([`Capacity::partition_bytes`]; `witness_only` for a pre-compiled circuit's).
    /// By default one partition is synthesised while the one before is proven.
    fn ahead(&mut self, files: &ParamFiles, capacity: &Capacity, witness_only: bool) -> Ahead {
        let _ = (files, capacity, witness_only);
        Ahead::ONE
    }

    /// Proves `input` (partition `partition` of the job) against `params`.
    fn prove(
        &mut self,
        params: &Parameters,
        input: PartitionInput,
        partition: usize,
    ) -> Result<Proof, ProverError>;

    /// Starts proving `input` (partition `partition`) against `params` (the Arc
    /// [`PartitionProver::parameters`] returned), and returns the proofs finished since the last
    /// call, of this partition or earlier ones. An error is that of a submitted partition: the
    /// job stops, and the prover must have stopped the rest of its partitions before returning
    /// it. By default the partition is proven here, with [`PartitionProver::prove`].
    fn submit(
        &mut self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        partition: usize,
    ) -> Result<Proven, ProverError> {
        let proof = self.prove(params, input, partition)?;
        Ok(vec![(partition, proof)])
    }

    /// Waits for every submitted partition and returns the proofs not returned yet (or the error
    /// of the lowest partition that failed). By default there are none: `submit` proved them.
    fn finish(&mut self) -> Result<Proven, ProverError> {
        Ok(Vec::new())
    }

    /// The job failed here (a partition did not synthesise, a proof did not verify): drop the
    /// partitions not yet started, and return once nothing still proves with the job's
    /// parameters. By default nothing is in flight.
    fn abandon(&mut self) {}
}

impl<F> PartitionProver for F
where
    F: FnMut(&Parameters, PartitionInput, usize) -> Result<Proof, ProverError>,
{
    fn prove(
        &mut self,
        params: &Parameters,
        input: PartitionInput,
        partition: usize,
    ) -> Result<Proof, ProverError> {
        self(params, input, partition)
    }
}

/// How long each step of one partition took.
#[derive(Clone, Debug, Default)]
pub struct PartitionReport {
    /// Building the circuit and synthesising it into the prover's input (a full assignment, or
    /// a pre-compiled circuit's witness), and checking it. The first partition's excludes the
    /// wait for the parameters, which load beside it.
    pub synthesis: Duration,
    /// From submitting the partition to the prover until its proof came back. A prover that
    /// proves as it is submitted (the default) makes this the proving time; one that proves
    /// asynchronously hands proofs back at its next call, so this is the partition's wall time
    /// in flight, overlapping other partitions' synthesis and proving.
    pub prove: Duration,
    /// Verifying the proof.
    pub verify: Duration,
    /// Constraints of the circuit, input constraints included.
    pub constraints: usize,
}

/// A proof's bytes and how they were made (PoRep C2, WinningPoSt).
#[derive(Clone, Debug)]
pub struct FilecoinProof {
    /// The partitions' 192-byte proofs, concatenated in partition order: the bytes
    /// `seal_commit_phase2` (or `generate_winning_post_with_vanilla`) returns.
    pub bytes: Vec<u8>,
    /// Reading the parameters (beside the first partitions' synthesis).
    pub load_params: Duration,
    /// From the first partition's submission to the last proof's return: the proving, which
    /// overlaps the later partitions' synthesis.
    pub proving: Duration,
    /// One report per partition.
    pub partitions: Vec<PartitionReport>,
}

/// Proves `partitions` partitions, the circuit and public inputs of partition `k` from
/// `circuit(k)`, against the parameters `files` names.
///
/// Partitions are synthesised on threads of their own, as many at once and as far ahead of the
/// prover as [`PartitionProver::ahead`] allows, and submitted as they are done; the parameters
/// are read on this thread meanwhile (synthesis is mostly one thread's work and reading decodes
/// points on every core, so on a small machine the two together take little more than the
/// longer of them). A full assignment's constraints are checked on its synthesis thread.
pub(crate) fn prove_partitions<C: Circuit<Scalar> + Send>(
    files: &ParamFiles,
    partitions: usize,
    prover: &mut dyn PartitionProver,
    circuit: impl Fn(usize) -> Result<(C, Vec<Scalar>), FilecoinError> + Sync,
) -> Result<FilecoinProof, FilecoinError> {
    let mut job = Partitions {
        reports: vec![PartitionReport::default(); partitions],
        inputs: vec![None; partitions],
        submitted: vec![None; partitions],
        proofs: vec![None; partitions],
    };
    let mut load_params = Duration::ZERO;
    let mut first_submitted = None;
    let mut run = |prover: &mut dyn PartitionProver| -> Result<(), FilecoinError> {
        if partitions == 0 {
            return Ok(());
        }
        // Recording needs a circuit of its own (the circuits are not all `Clone`): build one.
        let pre_compiled =
            prover.pre_compiled(files, &mut || Ok(cuzk_pce::record(circuit(0)?.0)?))?;
        // The file's counts, read without decoding it; where it cannot be read, the loaded
        // parameters' (exact) for the partitions that start after they are.
        let from_file = files.capacity();
        let loaded = std::sync::OnceLock::new();
        let capacity = || {
            from_file
                .or_else(|| loaded.get().copied())
                .unwrap_or_default()
        };
        let ahead = prover.ahead(files, &capacity(), pre_compiled.is_some());
        let make = |k: usize| -> Result<Made, FilecoinError> {
            let start = Instant::now();
            let (this, inputs) = circuit(k)?;
            let input = synthesize_partition(this, pre_compiled.clone(), capacity())?;
            // A pre-compiled circuit's witness has no a, b, c yet: it is checked row by row
            // where its products are made (the prover's backend, on the host or the device),
            // and an unsatisfied row is the prover's error.
            if let PartitionInput::Assignment(assignment) = &input {
                if let Some(constraint) = assignment.first_unsatisfied() {
                    return Err(FilecoinError::Unsatisfied {
                        partition: k,
                        constraint,
                    });
                }
            }
            Ok(Made {
                input,
                inputs,
                synthesis: start.elapsed(),
            })
        };
        std::thread::scope(|scope| {
            let made = ahead.start(scope, partitions, &make);
            // A parameter file that cannot be read is the first thing to report.
            let load_start = Instant::now();
            let params = prover.parameters(files)?;
            let _ = loaded.set(Capacity::of(&params));
            let pvk = prepare_verifying_key(&params.vk);
            load_params = load_start.elapsed();
            for (k, this) in made {
                let Made {
                    input,
                    inputs,
                    synthesis,
                } = this?;
                check_fits(&input.shape(), &params, files, &inputs)?;
                job.reports[k].constraints = input.num_constraints();
                job.reports[k].synthesis = synthesis;
                job.inputs[k] = Some(inputs);
                let now = Instant::now();
                first_submitted.get_or_insert(now);
                job.submitted[k] = Some(now);
                let proven = prover
                    .submit(&params, input, k)
                    .map_err(FilecoinError::Prover)?;
                job.collect(&pvk, proven)?;
            }
            job.collect(&pvk, prover.finish().map_err(FilecoinError::Prover)?)
        })
    };
    if let Err(e) = run(prover) {
        // Whatever the prover still has in flight is of a job that failed.
        prover.abandon();
        return Err(e);
    }

    let mut bytes = Vec::with_capacity(PROOF_BYTES * partitions);
    for (k, proof) in job.proofs.into_iter().enumerate() {
        let proof = proof.ok_or_else(|| lost(format!("partition {k} was never proven")))?;
        bytes.extend_from_slice(&proof.to_bytes());
    }
    Ok(FilecoinProof {
        bytes,
        load_params,
        proving: first_submitted.map_or(Duration::ZERO, |t: Instant| t.elapsed()),
        partitions: job.reports,
    })
}

/// One partition synthesised: the prover's input, the public inputs its proof verifies
/// against, and how long it took.
struct Made {
    input: PartitionInput,
    inputs: Vec<Scalar>,
    synthesis: Duration,
}

/// Synthesises one partition: with a pre-compiled form, its witness alone (the prover makes
/// a, b, c from the circuit's matrices); else in full, into an assignment of `capacity`.
pub fn synthesize_partition<C: Circuit<Scalar>>(
    circuit: C,
    pre_compiled: Option<Arc<cuzk_pce::PreCompiled>>,
    capacity: Capacity,
) -> Result<PartitionInput, FilecoinError> {
    Ok(match pre_compiled {
        Some(pc) => {
            let witness = pc.witness(circuit)?;
            PartitionInput::precompiled(pc, witness)?
        }
        None => synthesize_with_capacity(circuit, capacity)?.into(),
    })
}

/// The partitions of one job in flight: what each was submitted with and when, and the proofs
/// that came back.
struct Partitions {
    reports: Vec<PartitionReport>,
    /// Public inputs of the partitions submitted and not yet proven.
    inputs: Vec<Option<Vec<Scalar>>>,
    submitted: Vec<Option<Instant>>,
    proofs: Vec<Option<Proof>>,
}

impl Partitions {
    /// Verifies the proofs the prover handed back against `pvk` and keeps them.
    fn collect(&mut self, pvk: &PreparedVerifyingKey, proven: Proven) -> Result<(), FilecoinError> {
        for (k, proof) in proven {
            let submitted = self.submitted.get(k).copied().flatten();
            let (Some(submitted), Some(inputs)) =
                (submitted, self.inputs.get_mut(k).and_then(Option::take))
            else {
                return Err(lost(format!(
                    "the prover returned a proof of partition {k}, which is not in flight"
                )));
            };
            self.reports[k].prove = submitted.elapsed();
            let start = Instant::now();
            if !verify_proof(pvk, &proof, &inputs)? {
                return Err(FilecoinError::ProofInvalid { partition: k });
            }
            self.reports[k].verify = start.elapsed();
            self.proofs[k] = Some(proof);
        }
        Ok(())
    }
}

/// A prover that lost track of its partitions.
fn lost(detail: String) -> FilecoinError {
    FilecoinError::Prover(detail.into())
}

/// Reads the parameters `files` names and checks that the verifying key file is theirs.
pub fn read_checked(files: &ParamFiles) -> Result<Parameters, FilecoinError> {
    let vk = files.read_vk()?;
    let params = files.read_params()?;
    if params.vk != vk {
        return Err(FilecoinError::ParameterMismatch {
            path: files.vk.clone(),
            detail: "the verifying key is not the parameter file's".into(),
        });
    }
    Ok(params)
}

/// Parameters of another circuit show as counts (`shape`: the partition input's) that disagree
/// with the parameters' sizes.
fn check_fits(
    shape: &CircuitShape<'_>,
    params: &Parameters,
    files: &ParamFiles,
    inputs: &[blstrs::Scalar],
) -> Result<(), FilecoinError> {
    let mismatch = |detail: String| FilecoinError::ParameterMismatch {
        path: files.params.clone(),
        detail,
    };
    if shape.num_inputs != params.vk.ic.len() || inputs.len() + 1 != shape.num_inputs {
        return Err(mismatch(format!(
            "the circuit has {} public inputs, the parameters {}",
            shape.num_inputs,
            params.vk.ic.len()
        )));
    }
    if shape.num_aux != params.l.len() {
        return Err(mismatch(format!(
            "the circuit has {} private variables, the parameters {}",
            shape.num_aux,
            params.l.len()
        )));
    }
    let domain = shape.num_constraints.next_power_of_two();
    if domain != params.h.len() + 1 {
        return Err(mismatch(format!(
            "the circuit needs a domain of {} points, the parameters have {}",
            domain,
            params.h.len() + 1
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The loop with a toy circuit and provers that hand proofs back late and out of order.

    use std::path::PathBuf;

    use bellpepper_core::{ConstraintSystem, SynthesisError};
    use cuzk_groth16::Groth16Error;
    use cuzk_pipeline::{CpuBackend, JobContext, PipelineError, Prover, ProverConfig};
    use ff::Field;
    use rand_core::SeedableRng;

    use super::*;

    /// `x * x = y`, `y` public.
    struct Square {
        x: Scalar,
        y: Scalar,
    }

    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(self.x))?;
            let y = cs.alloc_input(|| "y", || Ok(self.y))?;
            cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    /// Partition `k` proves the square of `k + 2`.
    fn circuit(k: usize) -> Result<(Square, Vec<Scalar>), FilecoinError> {
        let x = Scalar::from(k as u64 + 2);
        Ok((Square { x, y: x.square() }, vec![x.square()]))
    }

    /// [`circuit`], except that partition 1's constraint does not hold.
    fn broken_at_1(k: usize) -> Result<(Square, Vec<Scalar>), FilecoinError> {
        let (mut c, inputs) = circuit(k)?;
        if k == 1 {
            c.y += Scalar::ONE;
        }
        Ok((c, inputs))
    }

    fn files() -> ParamFiles {
        ParamFiles {
            id: "square".into(),
            sector_size: 0,
            params: PathBuf::from("square.params"),
            vk: PathBuf::from("square.vk"),
            meta: PathBuf::from("square.meta"),
        }
    }

    /// What the toy prover does with the proofs it makes.
    #[derive(Clone, Copy, PartialEq)]
    enum Mode {
        /// Hands each proof back one submit late, the last ones at `finish` in reverse order.
        Late,
        /// Hands every proof back at `finish`, in reverse partition order.
        Reversed,
        /// Like `Late`, but gives partition 2 the proof of partition 1.
        Swapped,
        /// Like `Reversed`, but partition 2 fails.
        Fails,
    }

    /// Proves with the CPU pipeline as partitions are submitted, and hands the proofs back
    /// later, as `mode` says. With `pre_compiled`, it offers the circuit's pre-compiled form.
    struct Toy {
        params: Arc<Parameters>,
        prover: Prover<CpuBackend>,
        mode: Mode,
        held: Proven,
        abandoned: bool,
        pre_compiled: Option<Arc<cuzk_pce::PreCompiled>>,
        /// Partitions submitted as a pre-compiled circuit's witness.
        witnesses: usize,
    }

    impl Toy {
        fn new(mode: Mode) -> Self {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
            let params =
                cuzk_groth16::generate_random_parameters(circuit(0).unwrap().0, &mut rng).unwrap();
            Self {
                params: Arc::new(params),
                prover: Prover::new(CpuBackend, ProverConfig::default()),
                mode,
                held: Vec::new(),
                abandoned: false,
                pre_compiled: None,
                witnesses: 0,
            }
        }

        /// Offers the toy circuit's pre-compiled form, recorded by the loop.
        fn pre_compiled(mode: Mode) -> Self {
            let recording = cuzk_pce::record(circuit(0).unwrap().0).unwrap();
            let pc = cuzk_pce::PreCompiled::from_recording(&recording).unwrap();
            Self {
                pre_compiled: Some(Arc::new(pc)),
                ..Self::new(mode)
            }
        }
    }

    impl PartitionProver for Toy {
        fn parameters(&mut self, _: &ParamFiles) -> Result<Arc<Parameters>, FilecoinError> {
            Ok(Arc::clone(&self.params))
        }

        fn pre_compiled(
            &mut self,
            _: &ParamFiles,
            _: &mut dyn FnMut() -> Result<cuzk_pce::Recording, FilecoinError>,
        ) -> Result<Option<Arc<cuzk_pce::PreCompiled>>, FilecoinError> {
            Ok(self.pre_compiled.clone())
        }

        fn prove(
            &mut self,
            _: &Parameters,
            _: PartitionInput,
            _: usize,
        ) -> Result<Proof, ProverError> {
            unreachable!("the loop submits")
        }

        fn submit(
            &mut self,
            params: &Arc<Parameters>,
            input: PartitionInput,
            partition: usize,
        ) -> Result<Proven, ProverError> {
            assert!(Arc::ptr_eq(params, &self.params));
            match &input {
                PartitionInput::Assignment(_) => assert!(self.pre_compiled.is_none()),
                PartitionInput::Witness { circuit, .. } => {
                    let pc = self
                        .pre_compiled
                        .as_ref()
                        .expect("offered a pre-compiled form");
                    assert!(Arc::ptr_eq(circuit, pc));
                    self.witnesses += 1;
                }
            }
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(partition as u64);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let (mut proof, _) =
                self.prover
                    .prove(params, input, r, s, JobContext::default(), 0)?;
            if self.mode == Mode::Swapped && partition == 2 {
                proof = self.held.last().unwrap().1;
            }
            self.held.push((partition, proof));
            Ok(match self.mode {
                Mode::Late | Mode::Swapped if self.held.len() > 1 => vec![self.held.remove(0)],
                _ => Vec::new(),
            })
        }

        fn finish(&mut self) -> Result<Proven, ProverError> {
            if self.mode == Mode::Fails {
                return Err("partition 2 failed".into());
            }
            Ok(std::mem::take(&mut self.held).into_iter().rev().collect())
        }

        fn abandon(&mut self) {
            self.abandoned = true;
        }
    }

    #[test]
    fn proofs_handed_back_out_of_order_come_out_in_partition_order() {
        for mode in [Mode::Late, Mode::Reversed] {
            let mut toy = Toy::new(mode);
            let proof = prove_partitions(&files(), 4, &mut toy, circuit).unwrap();
            assert_eq!(proof.bytes.len(), 4 * PROOF_BYTES);
            assert_eq!(proof.partitions.len(), 4);
            assert!(!toy.abandoned);
            let pvk = prepare_verifying_key(&toy.params.vk);
            for k in 0..4 {
                let inputs = circuit(k).unwrap().1;
                let bytes = &proof.bytes[k * PROOF_BYTES..(k + 1) * PROOF_BYTES];
                let p = Proof::from_bytes(bytes).unwrap();
                assert!(verify_proof(&pvk, &p, &inputs).unwrap(), "partition {k}");
                // x * x = y, and one input constraint for each of `1` and `y`.
                assert_eq!(proof.partitions[k].constraints, 3);
            }
        }
    }

    #[test]
    fn an_invalid_or_failed_partition_fails_the_job_and_abandons_the_rest() {
        let mut toy = Toy::new(Mode::Swapped);
        let e = prove_partitions(&files(), 4, &mut toy, circuit).unwrap_err();
        assert!(
            matches!(e, FilecoinError::ProofInvalid { partition: 2 }),
            "{e}"
        );
        assert!(toy.abandoned);

        let mut toy = Toy::new(Mode::Fails);
        let e = prove_partitions(&files(), 4, &mut toy, circuit).unwrap_err();
        assert!(matches!(e, FilecoinError::Prover(_)), "{e}");
        assert!(toy.abandoned);

        // A partition that does not hold fails the job before it reaches the prover; the one
        // before it, submitted, is abandoned.
        let mut toy = Toy::new(Mode::Reversed);
        let e = prove_partitions(&files(), 3, &mut toy, broken_at_1).unwrap_err();
        assert!(
            matches!(e, FilecoinError::Unsatisfied { partition: 1, .. }),
            "{e}"
        );
        assert_eq!(toy.held.len(), 1, "only partition 0 was submitted");
        assert!(toy.abandoned);
    }

    /// With a pre-compiled circuit, partitions reach the prover as its witness: they prove to
    /// the same bytes as full synthesis's assignments, and a partition that does not hold is
    /// the prover's error (its rows are checked where a, b, c are made), which abandons the job.
    #[test]
    fn a_pre_compiled_circuit_submits_witnesses_checked_by_the_prover() {
        let mut full = Toy::new(Mode::Late);
        let expected = prove_partitions(&files(), 4, &mut full, circuit).unwrap();
        let mut toy = Toy::pre_compiled(Mode::Late);
        let proof = prove_partitions(&files(), 4, &mut toy, circuit).unwrap();
        assert_eq!(toy.witnesses, 4);
        assert_eq!(proof.bytes, expected.bytes);
        for report in &proof.partitions {
            assert_eq!(report.constraints, 3);
        }

        let mut toy = Toy::pre_compiled(Mode::Reversed);
        let e = prove_partitions(&files(), 3, &mut toy, broken_at_1).unwrap_err();
        let FilecoinError::Prover(inner) = &e else {
            panic!("expected the prover's error, got {e}");
        };
        assert!(
            matches!(
                inner.downcast_ref::<PipelineError>(),
                Some(PipelineError::Groth16(Groth16Error::Unsatisfied { .. }))
            ),
            "{e}"
        );
        assert_eq!(toy.witnesses, 2, "partitions 0 and 1 were submitted");
        assert_eq!(toy.held.len(), 1, "only partition 0 was proven");
        assert!(toy.abandoned);
    }
}
