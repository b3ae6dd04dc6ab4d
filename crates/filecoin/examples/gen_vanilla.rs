//! Seals a real sector with filecoin-proofs, deterministically, and writes its C1 output for
//! cuzk's tests and its default job: `cargo run --release -p cuzk-filecoin --example gen_vanilla
//! -- [OUT_DIR] [SECTOR_SIZE]` (default `testdata/filecoin` and `2KiB`).
//!
//! Writes `porep-<size>.c1.json` (Curio's wrapper, as a prover receives it) and
//! `porep-<size>.meta.json` (the miner, sector, registered proof, commitments, ticket and seed,
//! what `verify_seal` needs). Every input comes from a ChaCha20 rng with a fixed seed, so the
//! files are the same on every run. No Groth16 parameters are needed: C1 is vanilla proofs.

use std::path::PathBuf;

use anyhow::Context;
use cuzk_filecoin::filecoin_proofs::{
    self, add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    with_shape, MerkleTreeTrait, PieceInfo, UnpaddedBytesAmount,
};
use cuzk_filecoin::jobs::encode_hex;
use cuzk_filecoin::post::PostKind;
use cuzk_filecoin::{prover_id, C1Output, PostJobFile, RegisteredSealProof, SnapJobFile};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// The miner and sector of the test data.
const MINER_ID: u64 = 1000;
const SECTOR_NUMBER: u64 = 1;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| "testdata/filecoin".into()));
    let size = args.next().unwrap_or_else(|| "2KiB".into());
    let sector_size = cuzk_filecoin::parse_sector_size(&size)?;
    let registered = RegisteredSealProof::v1_1(sector_size)?;
    std::fs::create_dir_all(&out)?;
    let name = cuzk_filecoin::registered::format_sector_size(sector_size);
    let c1 = with_shape!(sector_size, seal, registered, &out, &name,)?;
    let c1_path = out.join(format!("porep-{name}.c1.json"));
    std::fs::write(&c1_path, c1.to_curio_json(SECTOR_NUMBER))?;
    let meta = serde_json::json!({
        "registered_proof": registered.number(),
        "registered_proof_name": registered.to_string(),
        "miner_id": MINER_ID,
        "sector_number": SECTOR_NUMBER,
        "comm_r": encode_hex(&c1.comm_r),
        "comm_d": encode_hex(&c1.comm_d),
        "ticket": encode_hex(&c1.ticket),
        "seed": encode_hex(&c1.seed),
    });
    std::fs::write(
        out.join(format!("porep-{name}.meta.json")),
        serde_json::to_string_pretty(&meta)? + "\n",
    )?;
    println!("wrote {}", c1_path.display());
    Ok(())
}

fn seal<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
    registered: RegisteredSealProof,
    out_dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<C1Output> {
    let config = registered.porep_config();
    let mut rng = ChaCha20Rng::seed_from_u64(40);
    let unpadded = UnpaddedBytesAmount::from(config.padded_bytes_amount());
    let mut data = vec![0u8; usize::from(unpadded)];
    rng.fill_bytes(&mut data);
    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);

    let dir = tempfile::tempdir()?;
    let staged = dir.path().join("staged");
    let sealed = dir.path().join("sealed");
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache)?;
    let (piece, _) = add_piece(&data[..], std::fs::File::create(&staged)?, unpadded, &[])
        .context("add_piece")?;
    let pieces: Vec<PieceInfo> = vec![piece];
    std::fs::File::create(&sealed)?;
    let prover = prover_id(MINER_ID);
    let sector = SECTOR_NUMBER.into();
    let pc1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        &config, &cache, &staged, &sealed, prover, sector, ticket, &pieces,
    )
    .context("seal_pre_commit_phase1")?;
    let pc2 =
        seal_pre_commit_phase2(&config, pc1, &cache, &sealed).context("seal_pre_commit_phase2")?;
    let comm_r = pc2.comm_r;
    let out: filecoin_proofs::SealCommitPhase1Output<Tree> = seal_commit_phase1(
        &config, &cache, &sealed, prover, sector, ticket, seed, pc2, &pieces,
    )
    .context("seal_commit_phase1")?;

    for kind in [PostKind::Winning, PostKind::Window] {
        post::<Tree>(
            &mut rng, kind, registered, comm_r, &sealed, &cache, out_dir, name,
        )?;
    }
    snap::<Tree>(&mut rng, registered, comm_r, &sealed, &cache, out_dir, name)?;

    // filecoin-proofs' JSON, then parsed as a prover would receive it.
    let json = serde_json::to_vec(&out)?;
    Ok(C1Output::parse(&json, Some(registered))?)
}

/// Writes `winning-<size>.json` or `window-<size>.json`: the PoSt vanilla proof of the sealed
/// sector (bincode, base64), as filecoin-proofs-api's `generate_winning_post_with_vanilla` /
/// `generate_single_window_post_with_vanilla` take it, with the randomness, miner, sector,
/// partition and comm_r its verifier needs.
#[allow(clippy::too_many_arguments)]
fn post<Tree: 'static + MerkleTreeTrait>(
    rng: &mut ChaCha20Rng,
    kind: PostKind,
    registered: RegisteredSealProof,
    comm_r: [u8; 32],
    sealed: &std::path::Path,
    cache: &std::path::Path,
    out_dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<()> {
    let config = cuzk_filecoin::post::post_config(kind, registered.sector_size)?;
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    // Lotus masks the randomness into the field.
    randomness[31] &= 0x3f;
    let sector = SECTOR_NUMBER.into();
    let prover = prover_id(MINER_ID);
    let replica = filecoin_proofs::PrivateReplicaInfo::<Tree>::new(
        sealed.to_path_buf(),
        comm_r,
        cache.to_path_buf(),
    )?;
    let challenges = filecoin_proofs::generate_fallback_sector_challenges::<Tree>(
        &config,
        &randomness,
        &[sector],
        prover,
    )
    .context("generate_fallback_sector_challenges")?;
    let proof = filecoin_proofs::generate_single_vanilla_proof::<Tree>(
        &config,
        sector,
        &replica,
        &challenges[&sector],
    )
    .context("generate_single_vanilla_proof")?;
    let file = PostJobFile {
        sector_size: registered.sector_size,
        miner_id: MINER_ID,
        sector_number: Some(SECTOR_NUMBER),
        comm_r: Some(comm_r),
        randomness,
        partition_index: 0,
        vanilla_proofs: vec![bincode::serialize(&proof)?],
    };
    let prefix = match kind {
        PostKind::Winning => "winning",
        PostKind::Window => "window",
    };
    std::fs::write(
        out_dir.join(format!("{prefix}-{name}.json")),
        file.to_json(),
    )?;
    Ok(())
}

/// Writes `snap-<size>.json`: a SnapDeals update of the sealed sector with new random data,
/// its partition proofs (bincode, base64) as `generate_empty_sector_update_proof_with_vanilla`
/// takes them, and the three commitments its verifier needs.
fn snap<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
    rng: &mut ChaCha20Rng,
    registered: RegisteredSealProof,
    comm_r_old: [u8; 32],
    sealed: &std::path::Path,
    cache: &std::path::Path,
    out_dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<()> {
    let porep = registered.porep_config();
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&porep);
    let unpadded = UnpaddedBytesAmount::from(porep.padded_bytes_amount());
    let mut data = vec![0u8; usize::from(unpadded)];
    rng.fill_bytes(&mut data);
    let dir = tempfile::tempdir()?;
    let staged = dir.path().join("staged-new");
    let (piece, _) = add_piece(&data[..], std::fs::File::create(&staged)?, unpadded, &[])
        .context("add_piece (update)")?;
    let replica = dir.path().join("update");
    let replica_cache = dir.path().join("update-cache");
    // The new replica is written in place, at the sector's size.
    std::fs::File::create(&replica)?.set_len(u64::from(porep.padded_bytes_amount()))?;
    std::fs::create_dir_all(&replica_cache)?;
    let encoded = filecoin_proofs::encode_into::<Tree>(
        &config,
        &replica,
        &replica_cache,
        sealed,
        cache,
        &staged,
        &[piece],
    )
    .context("encode_into")?;
    let proofs = filecoin_proofs::generate_partition_proofs::<Tree>(
        config,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        sealed,
        cache,
        &replica,
        &replica_cache,
    )
    .context("generate_partition_proofs")?;
    let file = SnapJobFile {
        sector_size: registered.sector_size,
        comm_r_old,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla_proofs: proofs
            .iter()
            .map(bincode::serialize)
            .collect::<Result<_, _>>()?,
    };
    std::fs::write(out_dir.join(format!("snap-{name}.json")), file.to_json())?;
    Ok(())
}
