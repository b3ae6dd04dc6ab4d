#!/usr/bin/env python3
"""A Python client generated from cuzk's proto with grpcio-tools drives a daemon.

Usage: client_check.py --cuzk PATH/TO/cuzk

Installs pinned grpcio, grpcio-tools and protobuf into a virtual environment in cuzk's cache
folder ($CUZK_CACHE_DIR, $XDG_CACHE_HOME/cuzk or ~/.cache/cuzk) on first use, generates the
Python stubs from crates/proto/proto into a temporary folder, starts `cuzk daemon` on a
temporary data folder (unix socket), and drives SubmitProof, AwaitProof, Prove, CancelProof, GetStatus, GetMetrics,
PreloadSRS, EvictSRS and the health service over it, checking each answer. Every wait is
bounded. Exits non-zero on the first failed check.
"""

import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

PINNED = ["grpcio==1.68.1", "grpcio-tools==1.68.1", "protobuf==5.29.5"]
HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent.parent / "proto" / "proto"


def cache_dir() -> pathlib.Path:
    # cuzk's cache folder, as cuzk_gpu_build::cache_root chooses it.
    root = os.environ.get("CUZK_CACHE_DIR") or (
        os.path.join(os.environ["XDG_CACHE_HOME"], "cuzk")
        if os.environ.get("XDG_CACHE_HOME")
        else os.path.join(os.environ["HOME"], ".cache", "cuzk")
    )
    return pathlib.Path(root) / ("py-grpc-" + "-".join(p.split("==")[1] for p in PINNED))


def ensure_venv() -> None:
    """Re-executes this script inside the pinned virtual environment."""
    venv = cache_dir()
    python = venv / "bin" / "python"
    if pathlib.Path(sys.prefix).resolve() == venv.resolve():
        return
    stamp = venv / "installed.txt"
    if not stamp.exists() or stamp.read_text() != "\n".join(PINNED):
        print(f"client_check: installing {' '.join(PINNED)} into {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--only-binary", ":all:", *PINNED],
            check=True,
        )
        stamp.write_text("\n".join(PINNED))
    os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


def generate(out: pathlib.Path) -> None:
    from grpc_tools import protoc  # noqa: PLC0415 (only inside the venv)

    out.mkdir(parents=True, exist_ok=True)

    proto = PROTO_ROOT / "cuzk" / "v1" / "proving.proto"
    rc = protoc.main([
        "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"--python_out={out}",
        f"--grpc_python_out={out}", str(proto),
    ])
    if rc != 0:
        sys.exit(f"client_check: protoc failed ({rc})")
    for d in [out / "cuzk", out / "cuzk" / "v1"]:
        (d / "__init__.py").touch()
    sys.path.insert(0, str(out))


def check(cond: bool, what: str) -> None:
    if not cond:
        sys.exit(f"client_check: FAILED: {what}")
    print(f"client_check: ok: {what}", flush=True)


def synthetic(pb, log_size: int, seed: int, partitions: int = 1, **kw):
    body = json.dumps({"log_size": log_size, "seed": seed, "partitions": partitions})
    return pb.SubmitProofRequest(proof_kind=pb.SYNTHETIC, vanilla_proof=body.encode(), **kw)


def start_daemon(cuzk: str, tmp: pathlib.Path) -> subprocess.Popen:
    data = tmp / "data"
    config = tmp / "cuzk.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{data}"\nshutdown_grace_secs = 5\nallow_synthetic = true\n'
        f'[srs]\ngenerate_test_params = true\n'
        f'[logging]\nlevel = "warn"\n'
    )
    daemon = subprocess.Popen([cuzk, "daemon", "--config", str(config)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    endpoints = data / "daemon.json"
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            sys.exit(f"client_check: the daemon exited ({daemon.returncode})")
        try:
            e = json.loads(endpoints.read_text())
            if e["pid"] == daemon.pid:
                return daemon
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    daemon.kill()
    sys.exit("client_check: the daemon did not start in 120 s")


def drive(addr: str) -> None:
    import grpc  # noqa: PLC0415
    from cuzk.v1 import proving_pb2 as pb  # noqa: PLC0415
    from cuzk.v1 import proving_pb2_grpc as rpc  # noqa: PLC0415

    # gRPC-core sends a unix socket's path as the HTTP/2 :authority, which HTTP/2 servers
    # (hyper's h2 here) reject as malformed; name the host explicitly, as for TCP.
    channel = grpc.insecure_channel(addr, options=[("grpc.default_authority", "localhost")])
    grpc.channel_ready_future(channel).result(timeout=30)
    stub = rpc.ProvingEngineStub(channel)
    T = 120  # seconds: every call's deadline

    # Submit, then Await.
    sub = stub.SubmitProof(synthetic(pb, 8, 1, request_id="py-1"), timeout=T)
    check(sub.job_id.startswith("job-"), f"SubmitProof gave job {sub.job_id}")
    again = stub.SubmitProof(synthetic(pb, 8, 1, request_id="py-1"), timeout=T)
    check(again.job_id == sub.job_id, "the same request_id names the same job")
    res = stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id, timeout_ms=0), timeout=T)
    check(res.status == pb.AwaitProofResponse.COMPLETED, f"AwaitProof: COMPLETED ({res.error_message})")
    check(len(res.proof) == 192, "one 192-byte proof")
    check(res.total_ms >= res.gpu_compute_ms, "timings are consistent")

    # Prove: submit and await in one call; the parameters are hot now.
    prove = stub.Prove(pb.ProveRequest(submit=synthetic(pb, 8, 2, partitions=2)), timeout=T)
    check(prove.result.status == pb.AwaitProofResponse.COMPLETED, "Prove: COMPLETED")
    check(len(prove.result.proof) == 384, "two partitions' proofs")
    check(prove.result.srs_load_ms == 0, "the second proof of a circuit loads nothing")

    # Cancel a long job while it runs, and one still pending behind it.
    long = stub.SubmitProof(synthetic(pb, 10, 3, partitions=200), timeout=T)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = stub.GetStatus(pb.GetStatusRequest(), timeout=T)
        if any(q.in_progress for q in st.queues):
            break
        time.sleep(0.02)
    pending = stub.SubmitProof(synthetic(pb, 8, 4), timeout=T)
    c1 = stub.CancelProof(pb.CancelProofRequest(job_id=pending.job_id), timeout=T)
    c2 = stub.CancelProof(pb.CancelProofRequest(job_id=long.job_id), timeout=T)
    check(not c1.was_running and c2.was_running, "CancelProof: pending then running")
    for job in (pending.job_id, long.job_id):
        r = stub.AwaitProof(pb.AwaitProofRequest(job_id=job, timeout_ms=60_000), timeout=T)
        check(r.status == pb.AwaitProofResponse.CANCELLED, f"job {job} CANCELLED")

    # A bad request: INVALID_ARGUMENT, and the daemon goes on.
    try:
        stub.SubmitProof(pb.SubmitProofRequest(proof_kind=pb.PROOF_KIND_UNSPECIFIED), timeout=T)
        check(False, "an unspecified kind is refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"unspecified kind: {e.code()}")

    # Status and metrics.
    st = stub.GetStatus(pb.GetStatusRequest(), timeout=T)
    check(st.total_proofs_completed == 2, f"GetStatus: 2 completed ({st.total_proofs_completed})")
    check(any(s.circuit_id == "synthetic-8" and s.tier == pb.SRSStatus.HOT for s in st.loaded_srs),
          "synthetic-8 is hot")
    check(len(st.gpus) == 0, "CPU workers are not listed as GPUs")
    m = stub.GetMetrics(pb.GetMetricsRequest(), timeout=T).prometheus_text
    check('cuzk_proofs_completed_total{kind="synthetic"} 2' in m, "GetMetrics counts the proofs")
    check('cuzk_proofs_cancelled_total{kind="synthetic"} 2' in m, "GetMetrics counts the cancels")

    # Parameters.
    ev = stub.EvictSRS(pb.EvictSrsRequest(circuit_id="synthetic-8"), timeout=T)
    check(ev.was_loaded and ev.freed_bytes > 0, "EvictSRS frees the hot parameters")
    pre = stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-8"), timeout=T)
    check(not pre.already_loaded, "PreloadSRS loads them again")
    pre = stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-8"), timeout=T)
    check(pre.already_loaded and pre.load_time_ms == 0, "a second PreloadSRS finds them hot")
    channel.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuzk", required=True, help="the cuzk binary")
    args = parser.parse_args()
    ensure_venv()
    with tempfile.TemporaryDirectory(prefix="cuzk-py-") as tmp:
        tmp = pathlib.Path(tmp)
        generate(tmp / "gen")
        daemon = start_daemon(os.path.abspath(args.cuzk), tmp)
        try:
            drive(f"unix://{tmp / 'data' / 'cuzk.sock'}")
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                rc = daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon.kill()
                sys.exit("client_check: the daemon did not stop in 60 s after SIGTERM")
        check(rc == 0, "the daemon stopped cleanly on SIGTERM")
    print("client_check: all checks passed")


if __name__ == "__main__":
    main()
