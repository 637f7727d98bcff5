"""fa-sim's tile API in Python: write a tile program as the C++ ones are written, run it on the executors.

A tile program is a function ``program(x, p, cfg)``, line for line its C++ twin (course/starter/*.cpp,
sim/algorithms/flash_attention_2.cpp)::

    from fasim.tile import *

    def program(x, p, cfg):
        BH, N, Nk, d = p.batch_heads(), p.N, p.Nk, p.d
        Br, Bc = cfg.Br, cfg.Bc
        Q, K, V, O, LSE = fused_tensors(x, p, Br, Bc)

        def block(b, bh, i):                      # one thread block: Q tile i of head bh
            q0 = i * Br
            rows = min(Br, N - q0)
            Qi = b.load(view(Q, bh).rows(q0, rows), Space.Shared, "Q_i")
            ...
            b.store(Oi, view(O, bh).rows(q0, rows))

        x.launch(KernelDesc("fa2_forward", "one block per Q tile", ceil_div(N, Br), BH, cfg.warps), block)

    FASIM_SUBMISSION = ("fa2_forward", program)   # what the grader (python3 -m fasim.grade) grades

C++ to Python: ``Space::Shared`` is ``Space.Shared``, ``{.transpose_b = true}`` is ``transpose_b=True``,
``b.map(S, Fn::exp_shifted, {S, scale, per_row(m)})`` is ``b.map(S, Fn.exp_shifted, [S, scale, per_row(m)])``,
``mi = std::move(m_new)`` is ``mi = m_new``, ``x.declare({"dO", BH, N, d, e, Br, d})`` is
``x.declare(GlobalTensor("dO", BH, N, d, e, Br, d))``.

A tile lives only while the body of the block that made it runs (as a C++ Tile dies with its scope):
using one after its block ended raises TileError, as does using a block or an executor after its run.
Programs run through fasim.course.grade() (and the fasim.grade command) or fasim.course.run().
"""

from ._fasim import tile as _tile

TileError = _tile.TileError
Space = _tile.Space
Fill = _tile.Fill
Reduce = _tile.Reduce
Split = _tile.Split
StoreMode = _tile.StoreMode
Fn = _tile.Fn
AttentionProblem = _tile.AttentionProblem
TileConfig = _tile.TileConfig
GlobalTensor = _tile.GlobalTensor
Region = _tile.Region
TensorView = _tile.TensorView
KernelDesc = _tile.KernelDesc
MaskSpec = _tile.MaskSpec
Tile = _tile.Tile
Arg = _tile.Arg
Block = _tile.Block
Executor = _tile.Executor
KvTileRange = _tile.KvTileRange
view = _tile.view
per_row = _tile.per_row
per_col = _tile.per_col
ceil_div = _tile.ceil_div
last_visible_key = _tile.last_visible_key
visible_kv_tiles = _tile.visible_kv_tiles
tile_crosses_diagonal = _tile.tile_crosses_diagonal
tile_fully_masked = _tile.tile_fully_masked
fused_tensors = _tile.fused_tensors

for _cls in (Space, Fill, Reduce, Split, StoreMode, Fn, AttentionProblem, TileConfig, GlobalTensor, Region, TensorView,
             KernelDesc, MaskSpec, Tile, Arg, Block, Executor, KvTileRange):
    _cls.__module__ = __name__  # fasim.tile.Tile, not fasim._fasim.tile.Tile, in messages and help()
del _cls

__all__ = [
    "TileError", "Space", "Fill", "Reduce", "Split", "StoreMode", "Fn", "AttentionProblem", "TileConfig", "GlobalTensor",
    "Region", "TensorView", "KernelDesc", "MaskSpec", "Tile", "Arg", "Block", "Executor", "KvTileRange", "view", "per_row",
    "per_col", "ceil_div", "last_visible_key", "visible_kv_tiles", "tile_crosses_diagonal", "tile_fully_masked",
    "fused_tensors",
]
