// The scheduler of the emulation (after the kernels and the table of
// kernels, which emu_test.go writes).

namespace {

enum { RUN, WAIT, DONE };
enum { BLOCK, WARP };

struct Fiber {
    ucontext_t ctx;
    int state, kind;
};

const size_t kStack = 256 << 10;
ucontext_t sched;
Fiber fibers[1024];
char* stacks;
int cur;
void (*kernel)(void**);
void** params;

void park(int kind) {
    fibers[cur].state = WAIT;
    fibers[cur].kind = kind;
    swapcontext(&fibers[cur].ctx, &sched);
}

void fiber_main(int t) {
    kernel(params);
    fibers[t].state = DONE;
}

// run_block runs one block of n threads to the end.
void run_block(int n) {
    for (int t = 0; t < n; t++) {
        Fiber& f = fibers[t];
        f.state = RUN;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks + (size_t)t * kStack;
        f.ctx.uc_stack.ss_size = kStack;
        f.ctx.uc_link = &sched;
        makecontext(&f.ctx, (void (*)())fiber_main, 1, t);
    }
    for (;;) {
        for (int t = 0; t < n; t++) {
            if (fibers[t].state != RUN) continue;
            cur = t;
            threadIdx = {(unsigned)t, 0, 0};
            swapcontext(&sched, &fibers[t].ctx);
        }
        // Every fiber waits or is done: release the warps whose live lanes
        // all wait at a warp barrier, else the block if all wait at one.
        int alive = 0, atBlock = 0;
        bool released = false;
        for (int w = 0; w < n / 32; w++) {
            int live = 0, atWarp = 0;
            for (int t = 32 * w; t < 32 * w + 32; t++) {
                if (fibers[t].state == DONE) continue;
                live++;
                if (fibers[t].kind == WARP) atWarp++;
                else atBlock++;
            }
            alive += live;
            if (live > 0 && atWarp == live) {
                for (int t = 32 * w; t < 32 * w + 32; t++)
                    if (fibers[t].state == WAIT) fibers[t].state = RUN;
                released = true;
            }
        }
        if (alive == 0) return;
        if (!released && atBlock == alive) {
            for (int t = 0; t < n; t++)
                if (fibers[t].state == WAIT) fibers[t].state = RUN;
            released = true;
        }
        if (!released) {
            fprintf(stderr, "emu: block (%u,%u): threads wait at different barriers\n", blockIdx.x, blockIdx.y);
            abort();
        }
    }
}

template <typename F>
struct arity;
template <typename... A>
struct arity<void (*)(A...)> {
    static constexpr size_t n = sizeof...(A);
};

template <typename... A, size_t... I>
void call_with(void (*f)(A...), void** p, std::index_sequence<I...>) {
    f(*(A*)p[I]...);
}

}  // namespace

void __syncthreads() { park(BLOCK); }
void emu_warp_wait() { park(WARP); }

template <auto F>
void launch_fn(void** p) {
    call_with(F, p, std::make_index_sequence<arity<decltype(F)>::n>{});
}

struct EmuKernel {
    const char* name;
    void (*fn)(void**);
};
extern const EmuKernel emu_kernels[];
extern const int emu_nkernels;

extern "C" int emu_lookup(const char* name) {
    for (int i = 0; i < emu_nkernels; i++)
        if (strcmp(emu_kernels[i].name, name) == 0) return i + 1;
    return 0;
}

// emu_launch runs kernel fn (emu_lookup's number) over the grid; 1-D
// blocks of whole warps only, as folio launches.
extern "C" int emu_launch(long fn, long gx, long gy, long gz, long bx, long by, long bz, void** p) {
    if (fn < 1 || fn > emu_nkernels || by != 1 || bz != 1 || bx % 32 != 0 || bx > 1024) return 1;
    if (!stacks) stacks = (char*)malloc(1024 * kStack);
    kernel = emu_kernels[fn - 1].fn;
    params = p;
    blockDim = {(unsigned)bx, 1, 1};
    gridDim = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
    for (long z = 0; z < gz; z++)
        for (long y = 0; y < gy; y++)
            for (long x = 0; x < gx; x++) {
                blockIdx = {(unsigned)x, (unsigned)y, (unsigned)z};
                run_block((int)bx);
            }
    return 0;
}
