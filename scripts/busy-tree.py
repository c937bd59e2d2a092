#!/usr/bin/env python3
# A busy process tree for measuring gate's /proc work: 8 worker processes
# of 8 threads each (waking every 10 ms), plus the parent, for SECONDS s.
#
# --maps N: before forking, the parent maps N files of 5 segments each
# (as a torch process maps ~250 libraries, ~1,000 lines of /proc/PID/maps,
# which every worker inherits), one of them under a path that gate's
# framework detection names torch (`.../torch/lib/libtorch_cuda.so`): the
# maps read (`frameworks` in GATE_PROFILE) then costs what it costs beside
# a real training loop, and finds something. The files live in a temporary
# directory, removed at the end.
#
# --torch: instead, the shape of a real training job: a main process that
# holds a CUDA context and trains a small MLP on the GPU, fed by a PyTorch
# DataLoader with 8 worker processes that build each sample on the CPU
# (needs torch and a GPU; prints samples_per_s at the end).
import mmap, os, shutil, sys, tempfile, threading, time

args = sys.argv[1:]


def torch_job(seconds):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Synthetic(Dataset):
        def __len__(self):
            return 1 << 30

        def __getitem__(self, i):
            # Decode-and-augment stand-in: a little CPU work per sample.
            g = torch.Generator().manual_seed(i)
            x = torch.rand(3, 64, 64, generator=g)
            return (x - x.mean()) / (x.std() + 1e-6), i % 10

    loader = DataLoader(Synthetic(), batch_size=64, num_workers=8, pin_memory=True, prefetch_factor=2)
    model = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(3 * 64 * 64, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    end, n = time.time() + seconds, 0
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        n += x.shape[0]
        if time.time() > end:
            break
    torch.cuda.synchronize()
    print(f"samples_per_s: {n / seconds:.1f}", flush=True)


if "--torch" in args:
    args.remove("--torch")
    torch_job(float(args[0]) if args else 20)
    sys.exit(0)
maps = 0
if "--maps" in args:
    i = args.index("--maps")
    maps = int(args[i + 1])
    del args[i : i + 2]
seconds = float(args[0]) if args else 20
PAGE = mmap.PAGESIZE
mapped, tmp = [], None
if maps > 0:
    tmp = tempfile.mkdtemp(prefix="busy-tree-")
    lib = os.path.join(tmp, "site-packages", "torch", "lib")
    os.makedirs(lib)
    for k in range(maps):
        name = "libtorch_cuda.so" if k == 0 else f"libfake_{k:04d}.so"
        path = os.path.join(lib, name)
        with open(path, "wb") as f:
            f.write(b"\0" * (10 * PAGE))
        with open(path, "rb") as f:
            # Every other page: file offsets not contiguous, so the kernel
            # keeps 5 separate mappings (lines in maps) per file.
            for s in range(5):
                mapped.append(mmap.mmap(f.fileno(), PAGE, offset=2 * s * PAGE, access=mmap.ACCESS_READ))


def spin():
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.01)


kids = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        ts = [threading.Thread(target=spin) for _ in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
if tmp:
    shutil.rmtree(tmp, ignore_errors=True)
print("samples_per_s: 1")
