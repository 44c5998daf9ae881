#!/usr/bin/env python3
"""bench/bench-kernels-torch.py: the shapes of bench-kernels, through PyTorch on the CPU.

    bench-kernels-torch.py [--threads N] [--reps R] [--filter TEXT] [--tsv FILE] [--lib SO]

Same shapes, same names, same timing rule (one warm-up, then the median of R runs) as
bench/bench-kernels. With --lib (the path of librobotrain.so) it also runs robotrain's
public kernels (rt_cpu_*) through ctypes on the same tensors, interleaving the repetitions
(torch, robotrain, torch, ...) so that both see the same load: bench/compare-torch.sh uses
that. PyTorch is only a yardstick here: nothing in robotrain's build or tests needs it."""

import argparse
import ctypes
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("bench-kernels-torch.py: PyTorch is not importable by %s (on Debian: "
             "apt-get install python3-torch)" % sys.executable)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=0,
                   help="threads (default: OMP_NUM_THREADS, else the CPU count)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--filter", default=None, help="only shapes whose name contains TEXT")
    p.add_argument("--tsv", default=None, help="also write key, impl, ms, GFLOP/s, best")
    p.add_argument("--lib", default=None, help="librobotrain.so: time its kernels alongside")
    return p.parse_args()


ARGS = parse_args()
THREADS = ARGS.threads or int(os.environ.get("OMP_NUM_THREADS", "0").split(",")[0] or 0) \
    or os.cpu_count()
torch.set_num_threads(THREADS)
TSV = open(ARGS.tsv, "w") if ARGS.tsv else None


# Both libraries may reach the same OpenBLAS; robotrain keeps it single-threaded and splits
# the work itself, PyTorch lets OpenBLAS thread: each side gets its setting before it runs.
_GLOBAL = ctypes.CDLL(None)
_OPENBLAS_THREADS = getattr(_GLOBAL, "openblas_set_num_threads", None)
RT = None
if ARGS.lib:
    RT = ctypes.CDLL(os.path.abspath(ARGS.lib))
    RT.rt_cpu_set_num_threads.argtypes = [ctypes.c_int]


def as_torch():
    if _OPENBLAS_THREADS:
        _OPENBLAS_THREADS(THREADS)


def as_robotrain():
    RT.rt_cpu_set_num_threads(THREADS)


def report(key, impl, flops, times):
    med, best = statistics.median(times), min(times)
    spread = (max(times) - best) / med
    print("%-46s %-12s %9.2f %8.1f %8.1f %6.1f%%" %
          (key, impl, med * 1e3, flops / med * 1e-9, flops / best * 1e-9, 100 * spread))
    sys.stdout.flush()
    if TSV:
        TSV.write("%s\t%s\t%.4f\t%.2f\t%.2f\n" % (key, impl, med * 1e3, flops / med * 1e-9,
                                                    flops / best * 1e-9))
        TSV.flush()


def run_case(key, flops, fn, ours=None):
    """Times fn (PyTorch) and, with --lib, ours (robotrain), interleaved."""
    if ARGS.filter and ARGS.filter not in key:
        return
    impls = [("torch", as_torch, fn)]
    if RT and ours:
        impls.append(("robotrain", as_robotrain, ours))
    for _, setup, f in impls:  # warm-up
        setup()
        f()
    times = [[] for _ in impls]
    for _ in range(ARGS.reps):
        for i, (_, setup, f) in enumerate(impls):
            setup()
            t0 = time.perf_counter()
            f()
            times[i].append(time.perf_counter() - t0)
    for (name, _, _), t in zip(impls, times):
        report(key, name, flops, t)


class ConvShape(ctypes.Structure):
    """rt_conv2d_shape of src/core/cpu/kernels.h"""
    _fields_ = [(name, ctypes.c_int64) for name in (
        "n", "c_in", "h", "w", "c_out", "kh", "kw", "stride_h", "stride_w", "pad_h", "pad_w",
        "dil_h", "dil_w", "h_out", "w_out")]


if RT:
    _b, _i, _f, _p = ctypes.c_bool, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
    RT.rt_cpu_gemm_f32.argtypes = [_b, _b, _i, _i, _i, _f, _p, _i, _p, _i, _f, _p, _i]
    RT.rt_cpu_gemm_batched_f32.argtypes = [_b, _b, _i, _i, _i, _i, _f, _p, _i, _i, _p, _i, _i,
                                           _f, _p, _i, _i]
    _s = ctypes.POINTER(ConvShape)
    RT.rt_cpu_conv2d_shape_init.argtypes = [_s]
    RT.rt_cpu_conv2d_shape_init.restype = ctypes.c_bool
    RT.rt_cpu_conv2d_workspace_size.argtypes = [_s]
    RT.rt_cpu_conv2d_workspace_size.restype = ctypes.c_size_t
    RT.rt_cpu_conv2d_forward_f32.argtypes = [_s, _p, _p, _p, _p, _p]
    RT.rt_cpu_conv2d_backward_data_f32.argtypes = [_s, _p, _p, _p, _b, _p]
    RT.rt_cpu_conv2d_backward_weight_f32.argtypes = [_s, _p, _p, _p, _p, _b, _p]


def ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def rt_gemm(ta, tb, m, n, k, a, b, c):
    """C[m, n] = op(A) op(B) with robotrain, all contiguous row-major"""
    lda, ldb = (m if ta else k), (k if tb else n)
    pa, pb, pc = ptr(a), ptr(b), ptr(c)
    return lambda: RT.rt_cpu_gemm_f32(ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, n)


def rand(*shape):
    return torch.rand(*shape, dtype=torch.float32) - 0.5


def bench_transformer():
    m = 8 * 302
    for fin, fout in ((512, 512), (512, 3200), (3200, 512)):
        x, w, dy = rand(m, fin), rand(fout, fin), rand(m, fout)
        y, dx, dw = torch.empty(m, fout), torch.empty(m, fin), torch.empty(fout, fin)
        f = 2.0 * m * fin * fout
        run_case("linear %d->%d fwd (M=%d)" % (fin, fout, m), f,
                 lambda: torch.mm(x, w.t(), out=y),
                 RT and rt_gemm(False, True, m, fout, fin, x, w, y))
        run_case("linear %d->%d bwd-data" % (fin, fout), f, lambda: torch.mm(dy, w, out=dx),
                 RT and rt_gemm(False, False, m, fin, fout, dy, w, dx))
        run_case("linear %d->%d bwd-weight" % (fin, fout), f,
                 lambda: torch.mm(dy.t(), x, out=dw),
                 RT and rt_gemm(True, False, fout, fin, m, dy, x, dw))
    q, k = rand(64, 302, 64), rand(64, 302, 64)
    s = torch.empty(64, 302, 302)
    ours = None
    if RT:
        pq, pk, ps = ptr(q), ptr(k), ptr(s)
        ours = lambda: RT.rt_cpu_gemm_batched_f32(False, True, 64, 302, 302, 64, 1.0, pq, 64,
                                                  302 * 64, pk, 64, 302 * 64, 0.0, ps, 302,
                                                  302 * 302)
    run_case("attention QK^T 64x(302x302x64)", 2.0 * 64 * 302 * 302 * 64,
             lambda: torch.bmm(q, k.transpose(1, 2), out=s), ours)
    p, v, o = rand(64, 302, 302), rand(64, 302, 64), torch.empty(64, 302, 64)
    if RT:
        pp, pv, po = ptr(p), ptr(v), ptr(o)
        ours = lambda: RT.rt_cpu_gemm_batched_f32(False, False, 64, 302, 64, 302, 1.0, pp, 302,
                                                  302 * 302, pv, 64, 302 * 64, 0.0, po, 64,
                                                  302 * 64)
    run_case("attention PV 64x(302x64x302)", 2.0 * 64 * 302 * 64 * 302,
             lambda: torch.bmm(p, v, out=o), ours)


def conv_out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


def bench_conv(name, n, c_in, h, w, c_out, k, stride, pad):
    keys = ["%s %dx%d %d->%d k%d/%d %s" % (name, h, w, c_in, c_out, k, stride, p)
            for p in ("fwd", "bwd-data", "bwd-weight")]
    if ARGS.filter and not any(ARGS.filter in key for key in keys):
        return
    ho, wo = conv_out(h, k, stride, pad), conv_out(w, k, stride, pad)
    x, wt, b = rand(n, c_in, h, w), rand(c_out, c_in, k, k), rand(c_out)
    dy = rand(n, c_out, ho, wo)
    flops = 2.0 * n * c_out * ho * wo * c_in * k * k
    conv_bwd = torch.ops.aten.convolution_backward
    st, pd, dl = [stride, stride], [pad, pad], [1, 1]
    ours = [None, None, None]
    if RT:
        shape = ConvShape(n, c_in, h, w, c_out, k, k, stride, stride, pad, pad, 1, 1, 0, 0)
        assert RT.rt_cpu_conv2d_shape_init(ctypes.byref(shape))
        ws = torch.empty(RT.rt_cpu_conv2d_workspace_size(ctypes.byref(shape)) // 4 + 1)
        y, dx, dw, db = torch.empty(n, c_out, ho, wo), torch.empty_like(x), \
            torch.empty_like(wt), torch.empty_like(b)
        sp = ctypes.byref(shape)
        px, pw, pb, py, pdy = ptr(x), ptr(wt), ptr(b), ptr(y), ptr(dy)
        pdx, pdw, pdb, pws = ptr(dx), ptr(dw), ptr(db), ptr(ws)
        ours = [lambda: RT.rt_cpu_conv2d_forward_f32(sp, px, pw, pb, py, pws),
                lambda: RT.rt_cpu_conv2d_backward_data_f32(sp, pdy, pw, pdx, False, pws),
                lambda: RT.rt_cpu_conv2d_backward_weight_f32(sp, px, pdy, pdw, pdb, False, pws)]
    run_case(keys[0], flops, lambda: F.conv2d(x, wt, b, stride, pad), ours[0])
    run_case(keys[1], flops, lambda: conv_bwd(dy, x, wt, None, st, pd, dl, False, [0, 0], 1,
                                             [True, False, False]), ours[1])
    run_case(keys[2], flops, lambda: conv_bwd(dy, x, wt, [c_out], st, pd, dl, False, [0, 0], 1,
                                             [False, True, True]), ours[2])


def bench_resnet18(tag, h, w):
    n = 8
    bench_conv("%s stem" % tag, n, 3, h, w, 64, 7, 2, 3)
    sh, sw = conv_out(h, 7, 2, 3), conv_out(w, 7, 2, 3)
    sh, sw = conv_out(sh, 3, 2, 1), conv_out(sw, 3, 2, 1)  # max pool
    bench_conv("%s layer1" % tag, n, 64, sh, sw, 64, 3, 1, 1)
    c = 64
    for layer in (2, 3, 4):
        oh, ow = conv_out(sh, 3, 2, 1), conv_out(sw, 3, 2, 1)
        bench_conv("%s layer%d.0" % (tag, layer), n, c, sh, sw, 2 * c, 3, 2, 1)
        bench_conv("%s layer%d.ds" % (tag, layer), n, c, sh, sw, 2 * c, 1, 2, 0)
        bench_conv("%s layer%d" % (tag, layer), n, 2 * c, oh, ow, 2 * c, 3, 1, 1)
        sh, sw, c = oh, ow, 2 * c


def main():
    print("# PyTorch %s on the CPU: %d thread(s), median of %d runs after a warm-up; "
          "oneDNN (mkldnn) %s" % (torch.__version__, torch.get_num_threads(), ARGS.reps,
                                  "on" if torch.backends.mkldnn.is_available() else "off"))
    print("%-46s %-12s %9s %8s %8s %7s" % ("shape (batch 8)", "impl", "median ms", "GFLOP/s",
                                          "best", "spread"))
    with torch.no_grad():
        bench_transformer()
        bench_resnet18("r18@96", 96, 96)
        bench_resnet18("r18@480", 480, 640)
    if TSV:
        TSV.close()


if __name__ == "__main__":
    main()
