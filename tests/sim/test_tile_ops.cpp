// The tile operations a backward pass and split-KV decoding are written with, checked on small
// programs that are not attention: products with a transposed operand, broadcasts along rows and
// columns, and stores that accumulate (by the block, or atomically at L2), each run by the
// functional executor (values against Eigen in double) and counted by the counting executor.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "exec/counting_executor.hpp"
#include "exec/functional_executor.hpp"
#include "inputs.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using reference::Matrix;

namespace {

AttentionProblem one_head(std::int64_t N, std::int64_t d, DType dtype = DType::fp32) {
    AttentionProblem p = test::problem(N, d, 1, dtype);
    return p;
}

// dK = dSᵀ · Q, as FlashAttention's backward computes it per tile: the product reads dS transposed.
void transposed_product(Executor& x, std::int64_t n, std::int64_t m, std::int64_t d) {
    const GlobalTensor A = x.declare({"dS", 1, n, m, 4, n, m});
    const GlobalTensor B = x.declare({"Q", 1, n, d, 4, n, d});
    const GlobalTensor C = x.declare({"dK", 1, m, d, 4, m, d});
    x.launch({"dk", "dK = dS^T Q", 1, 1}, [&](Block& b, std::int64_t h, std::int64_t) {
        Tile a = b.load(view(A, h).rows(0, n), Space::Shared, "dS");
        Tile q = b.load(view(B, h).rows(0, n), Space::Shared, "Q");
        Tile c = b.alloc(m, d, Space::Registers, Fill::Zero, "dK");
        b.matmul(c, a, q, {.transpose_a = true});
        b.store(c, view(C, h).rows(0, m));
    });
}

// Every one of `blocks` blocks adds its own row tile of X into the same 1 x cols output: column sums.
void column_sums(Executor& x, std::int64_t blocks, std::int64_t rows, std::int64_t cols, StoreMode mode) {
    const GlobalTensor X = x.declare({"X", 1, blocks * rows, cols, 4, rows, cols});
    const GlobalTensor Y = x.declare({"Y", 1, 1, cols, 4, 1, cols});
    x.launch({"zero", "Y = 0", 1, 1}, [&](Block& b, std::int64_t h, std::int64_t) {
        b.store(b.alloc(1, cols, Space::Registers, Fill::Zero, "0"), view(Y, h).rows(0, 1));
    });
    x.launch({"sum", "Y += colsum(X_i)", blocks, 1}, [&](Block& b, std::int64_t h, std::int64_t i) {
        Tile t = b.load(view(X, h).rows(i * rows, rows), Space::Registers, "X_i");
        Tile ones = b.alloc(1, rows, Space::Registers, Fill::Zero, "1");
        b.map(ones, Fn::add, {ones, 1.0});
        Tile s = b.alloc(1, cols, Space::Registers, Fill::Zero, "colsum");
        b.matmul(s, ones, t, {});
        b.store(s, view(Y, h).rows(0, 1), mode);
    });
}

// Z = (X - v_j) * w_i: a column broadcast, then a row broadcast, then a subtraction of the two.
void broadcasts(Executor& x, std::int64_t rows, std::int64_t cols) {
    const GlobalTensor X = x.declare({"X", 1, rows, cols, 4, rows, cols});
    const GlobalTensor V = x.declare({"v", 1, 1, cols, 4, 1, cols});
    const GlobalTensor W = x.declare({"w", 1, 1, rows, 4, 1, rows, true});
    const GlobalTensor Z = x.declare({"Z", 1, rows, cols, 4, rows, cols});
    x.launch({"bcast", "Z = (X - v) * w", 1, 1}, [&](Block& b, std::int64_t h, std::int64_t) {
        Tile t = b.load(view(X, h).rows(0, rows), Space::Registers, "X");
        Tile v = b.load(view(V, h).rows(0, 1), Space::Registers, "v");
        Tile w = b.load(view(W, h).tile(0, 1, 0, rows), Space::Registers, "w");
        b.map(t, Fn::sub, {t, per_col(v)});
        b.map(t, Fn::mul, {t, per_row(w)});
        b.store(t, view(Z, h).rows(0, rows));
    });
}

}  // namespace

TEST_CASE("matmul with the first operand transposed computes dSᵀQ (the backward's dK and dV products)", "[tile-ops]") {
    const std::int64_t n = 24, m = 16, d = 8;
    const Matrix dS = reference::random_normal(n, m, 11), Q = reference::random_normal(n, d, 12);
    FunctionalExecutor x(test::a100(), one_head(n, d), {{"dS", {dS}}, {"Q", {Q}}});
    transposed_product(x, n, m, d);
    const Matrix want = dS.transpose() * Q;
    CHECK((x.tensor("dK", 0).cast<double>() - want).cwiseAbs().maxCoeff() < 1e-4);
    const KernelRecord& k = x.kernels().front();
    CHECK(k.matmul_flops == 2 * n * m * d);  // the same FLOPs as the untransposed m x n x d product
}

TEST_CASE("stores that accumulate add every block's tile, and atomic adds reach DRAM once", "[tile-ops]") {
    const std::int64_t blocks = 8, rows = 4, cols = 32;
    const Matrix X = reference::random_normal(blocks * rows, cols, 5);
    for (StoreMode mode : {StoreMode::accumulate, StoreMode::atomic_add}) {
        CAPTURE(static_cast<int>(mode));
        FunctionalExecutor x(test::a100(), one_head(blocks * rows, cols), {{"X", {X}}});
        column_sums(x, blocks, rows, cols, mode);
        const Matrix want = X.colwise().sum();
        CHECK((x.tensor("Y", 0).cast<double>() - want).cwiseAbs().maxCoeff() < 1e-4);

        const KernelRecord& sum = x.kernels().back();
        const std::int64_t y_bytes = cols * 4;
        CHECK(write_of(sum.hbm, "Y") == blocks * y_bytes);  // every block sends its sums
        if (mode == StoreMode::accumulate) {
            CHECK(read_of(sum.hbm, "Y") == blocks * y_bytes);  // and reads what is there first
        } else {
            CHECK(read_of(sum.hbm, "Y") == 0);  // the L2 adds: nothing comes back to the SMs
        }
        // Y stays in L2 from the zeroing kernel on: no DRAM read, one write-back.
        CHECK(read_of(sum.dram, "Y") == 0);
        CHECK(write_of(sum.dram, "Y") == 0);
        CHECK(write_of(x.kernels().front().dram, "Y") == y_bytes);
    }
}

TEST_CASE("maps broadcast a row vector down the columns and a row statistic along the rows", "[tile-ops]") {
    const std::int64_t rows = 6, cols = 10;
    const Matrix X = reference::random_normal(rows, cols, 1), v = reference::random_normal(1, cols, 2),
                 w = reference::random_normal(1, rows, 3);
    FunctionalExecutor x(test::a100(), one_head(rows, cols), {{"X", {X}}, {"v", {v}}, {"w", {w}}});
    broadcasts(x, rows, cols);
    Matrix want(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) want(i, j) = (X(i, j) - v(0, j)) * w(0, i);
    CHECK((x.tensor("Z", 0).cast<double>() - want).cwiseAbs().maxCoeff() < 1e-5);
    CHECK(x.kernels().front().nonmatmul_flops == 2 * rows * cols);  // a subtraction and a product per element
}

TEST_CASE("a map with operands of the wrong shape is a tile-program bug, named", "[tile-ops]") {
    CountingExecutor x(test::a100());
    const GlobalTensor X = x.declare({"X", 1, 4, 8, 4, 4, 8});
    CHECK_THROWS_WITH(x.launch({"bad", "", 1, 1},
                               [&](Block& b, std::int64_t h, std::int64_t) {
                                   Tile t = b.load(view(X, h).rows(0, 4), Space::Registers, "X");
                                   Tile v = b.alloc_statistic(3, Space::Registers, Fill::Zero, "v");
                                   b.map(t, Fn::mul, {t, per_row(v)});
                               }),
                      Catch::Contains("map mul into a 4x8 tile: an operand is 3x1, not 4x1"));
    CHECK_THROWS_WITH(x.launch({"bad", "", 1, 1},
                               [&](Block& b, std::int64_t h, std::int64_t) {
                                   Tile t = b.load(view(X, h).rows(0, 4), Space::Registers, "X");
                                   b.map(t, Fn::fma, {t, t});
                               }),
                      Catch::Contains("2 operands, it takes 3"));
}

TEST_CASE("a tensor used before it is declared is a tile-program bug, named", "[tile-ops]") {
    CountingExecutor x(test::a100());
    const GlobalTensor stray{"stray", 1, 4, 4, 4, 4, 4};
    CHECK_THROWS_WITH(x.launch({"k", "", 1, 1},
                               [&](Block& b, std::int64_t h, std::int64_t) {
                                   b.load(view(stray, h).rows(0, 4), Space::Registers, "stray");
                               }),
                      Catch::Contains("tensor stray was not declared before kernel k"));
}
