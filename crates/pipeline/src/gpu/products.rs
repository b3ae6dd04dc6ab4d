//! The `products` stage on the device: a, b, c where the NTT reads them.
//!
//! A pre-compiled circuit whose matrices are resident ([`GpuBackend::preload_circuit`]: its
//! [`DeviceImage`](cuzk_pce::DeviceImage), one named region of the arena per topology, about 5
//! bytes a non-zero) has its a, b, c made on the device by `pce_products` (cuzk-pce's
//! [`GpuProducts`](cuzk_pce::gpu::GpuProducts)) from the values the query splits uploaded,
//! which the partition's memory kept for it ([`PartitionMemory::keep_values`]): the witness is
//! the partition's only upload, every row's `a·b = c` is checked there, and the host computes
//! nothing but the witness. Host vectors (synthesis's, or the host's products for a circuit
//! whose matrices did not fit) go up through the pinned staging buffers.

use std::sync::Arc;

use cuzk_field::layout::{scalars_as_limbs, FrLimbs};
use cuzk_field::Domain;
use cuzk_gpu::{alloc_in, DeviceBuffer};
use cuzk_groth16::Groth16Error;
use cuzk_pce::gpu::DeviceMatrices;
use cuzk_pce::PreCompiled;

use super::{on, GpuBackend, GpuBackendError};
use crate::backend::PartitionShape;
use crate::input::Evaluations;
use crate::PipelineError;

/// A topology's matrices resident on the device.
pub(super) struct ResidentCircuit(DeviceMatrices);

impl GpuBackend {
    /// Makes `circuit`'s matrices resident on the device (a named region of the arena), where
    /// they serve every later partition of that topology: `products` then runs on the device.
    /// Residency never takes the room one partition of the circuit needs (bounded from its
    /// counts) and the NTT's tables; preload a circuit before its parameters, so that its
    /// matrices (a few gigabytes at 2^27, which save the host's products and the upload of a,
    /// b, c) come before parameters that would otherwise be resident (which are then mapped).
    /// Returns whether they are resident; `false` (logged) leaves the products on the host.
    pub fn preload_circuit(&self, circuit: &PreCompiled) -> Result<bool, PipelineError> {
        let err = on(&self.name);
        if self.resident_circuit(circuit).is_some() {
            return Ok(true);
        }
        let layout = circuit.image_layout();
        let values = circuit.num_inputs() + circuit.num_aux();
        let shape = PartitionShape {
            domain: circuit.num_constraints().next_power_of_two(),
            values,
            tail_g1: values,
            tail_g2: values,
            ones: values,
        };
        let room = self.room_beside_a_partition(shape);
        if layout.bytes() > room {
            tracing::info!(
                device = %self.name,
                topology = %circuit.topology_hex(),
                bytes = layout.bytes(),
                room,
                "the pre-compiled matrices do not fit beside a partition: products on the host"
            );
            return Ok(false);
        }
        let image = circuit.device_image()?;
        let stream = self.msm.stream();
        let name = format!("pce/{}", circuit.topology_hex());
        let Some(buffer) = self.resident_region(stream, &name, image.words())? else {
            return Ok(false);
        };
        stream
            .synchronize()
            .map_err(GpuBackendError::gpu("uploading the pre-compiled matrices"))
            .map_err(&err)?;
        tracing::info!(
            device = %self.name,
            topology = %circuit.topology_hex(),
            bytes = layout.bytes(),
            bytes_per_nonzero = layout.bytes_per_nonzero(),
            "pre-compiled matrices resident"
        );
        let matrices = DeviceMatrices::new(buffer, layout)
            .map_err(|source| GpuBackendError::Products {
                what: "the pre-compiled matrices",
                source,
            })
            .map_err(&err)?;
        self.circuits().push(Arc::new(ResidentCircuit(matrices)));
        Ok(true)
    }

    /// Device bytes of the resident pre-compiled matrices.
    pub fn circuit_bytes(&self) -> u64 {
        self.circuits().iter().map(|c| c.0.layout().bytes()).sum()
    }

    fn circuits(&self) -> std::sync::MutexGuard<'_, Vec<Arc<ResidentCircuit>>> {
        // Pushes only: a panic while held leaves the list consistent.
        self.share
            .circuits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn resident_circuit(&self, circuit: &PreCompiled) -> Option<Arc<ResidentCircuit>> {
        let topology = circuit.topology();
        self.circuits()
            .iter()
            .find(|c| c.0.layout().topology == topology)
            .cloned()
    }

    /// The `products` stage (see the module docs): a ‖ b ‖ c in one buffer of the partition's
    /// reservation.
    pub(super) fn products_on_device(
        &self,
        domain: &Domain,
        evaluations: Evaluations<'_>,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let memory = self.workspace();
        let kept = memory.0.as_ref().and_then(|m| m.take_values());
        if let Evaluations::Products { circuit, witness } = &evaluations {
            if let Some(resident) = self.resident_circuit(circuit) {
                return self.timed(|| self.device_products(&resident, witness, kept, domain.n()));
            }
        }
        // The kept values are not needed: free them before a, b, c are made.
        drop(kept);
        let (a, b, c) = evaluations.into_vectors(domain.n())?;
        self.timed(|| self.upload_abc(domain.n(), [a, b, c]))
    }

    fn device_products(
        &self,
        resident: &ResidentCircuit,
        witness: &cuzk_pce::Witness,
        kept: Option<DeviceBuffer<FrLimbs>>,
        n: usize,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let err = on(&self.name);
        let values = match kept {
            Some(values) => values,
            None => self.upload_values(witness.input(), witness.aux())?,
        };
        let stream = self.msm.stream();
        let mut abc = self.alloc_abc(n)?;
        let memory = self.workspace();
        let mut first_bad = alloc_in::<u32>(memory.get(), stream, 1)
            .map_err(GpuBackendError::gpu("allocating the products' check"))
            .map_err(&err)?;
        stream
            .copy_to_device(&[u32::MAX], &mut first_bad)
            .map_err(GpuBackendError::gpu("clearing the products' check"))
            .map_err(&err)?;
        self.share
            .products
            .evaluate(stream, &resident.0, &values, &mut abc, n, &mut first_bad)
            .map_err(|source| GpuBackendError::Products {
                what: "A·z, B·z, C·z",
                source,
            })
            .map_err(&err)?;
        let mut bad = [0u32];
        stream
            .copy_to_host(&first_bad, &mut bad)
            .map_err(GpuBackendError::gpu("reading the products' check"))
            .map_err(&err)?;
        drop(values);
        if bad[0] != u32::MAX {
            return Err(Groth16Error::Unsatisfied {
                index: bad[0] as usize,
            }
            .into());
        }
        Ok(abc)
    }

    /// a, b, c from host vectors (each `n` long) into one buffer of the reservation.
    fn upload_abc(
        &self,
        n: usize,
        vectors: [Vec<cuzk_field::Scalar>; 3],
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let err = on(&self.name);
        let stream = self.msm.stream();
        let mut abc = self.alloc_abc(n)?;
        for (i, v) in vectors.into_iter().enumerate() {
            self.upload_staged(stream, scalars_as_limbs(&v), &mut abc, i * n)
                .map_err(&err)?;
        }
        Ok(abc)
    }

    /// One buffer of the reservation for a ‖ b ‖ c, each `n` long.
    fn alloc_abc(&self, n: usize) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let memory = self.workspace();
        alloc_in::<FrLimbs>(memory.get(), self.msm.stream(), 3 * n)
            .map_err(GpuBackendError::gpu("allocating a, b, c"))
            .map_err(on(&self.name))
    }
}
