// Polar SVD (spec 002 §0): F = U Σ V^T with proper rotations U, V, singular values ordered
// σ_1 ≥ … ≥ |σ_d|, only σ_d negative and exactly when det F < 0; reconstruction, orthogonality
// and singular values against Eigen::JacobiSVD to 1e-12, on random, rotated, near-singular,
// repeated, inverted and exact (identity, diagonal, zero, rank-one) matrices. The 3×3 timing
// against Eigen::JacobiSVD is printed, not asserted.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/SVD>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <vector>

#include "core/Svd.hpp"

namespace nendo {
namespace {

constexpr Real kTolerance = 1e-12;

template <int D>
Mat<D> random_rotation(std::mt19937_64& rng) {
  std::normal_distribution<Real> normal;
  if constexpr (D == 2) {
    return Eigen::Rotation2D<Real>(std::uniform_real_distribution<Real>(-M_PI, M_PI)(rng)).toRotationMatrix();
  } else {
    Eigen::Quaternion<Real> q(normal(rng), normal(rng), normal(rng), normal(rng));
    return q.normalized().toRotationMatrix();
  }
}

template <int D>
Mat<D> random_matrix(std::mt19937_64& rng, Real scale = 1) {
  std::normal_distribution<Real> normal;
  Mat<D> A;
  for (int i = 0; i < D * D; ++i) A(i) = scale * normal(rng);
  return A;
}

// R diag(sigma) Q with random rotations R, Q.
template <int D>
Mat<D> with_singular_values(std::mt19937_64& rng, const Eigen::Matrix<Real, D, 1>& sigma) {
  return random_rotation<D>(rng) * sigma.asDiagonal() * random_rotation<D>(rng);
}

template <int D>
void expect_polar_svd(const Mat<D>& F, const std::string& what) {
  const PolarSvd<D> svd = polar_svd(F);
  const Real scale = std::max(F.norm(), Real(1e-300));
  const Mat<D> I = Mat<D>::Identity();
  SCOPED_TRACE(what);
  ASSERT_LE((svd.U * svd.sigma.asDiagonal() * svd.V.transpose() - F).norm(), kTolerance * scale) << "F =\n"
                                                                                                 << F;
  ASSERT_LE((svd.U.transpose() * svd.U - I).norm(), kTolerance);
  ASSERT_LE((svd.V.transpose() * svd.V - I).norm(), kTolerance);
  ASSERT_NEAR(svd.U.determinant(), 1.0, kTolerance);
  ASSERT_NEAR(svd.V.determinant(), 1.0, kTolerance);
  for (int i = 0; i + 1 < D; ++i) {
    ASSERT_GE(svd.sigma(i), 0.0) << "only the last singular value may be negative";
    ASSERT_GE(svd.sigma(i) - std::abs(svd.sigma(i + 1)), -kTolerance * scale) << "ordering";
  }
  const Real det = F.determinant();
  if (std::abs(det) > 1e-10 * std::pow(scale, D)) {
    ASSERT_EQ(svd.sigma(D - 1) < 0, det < 0) << "σ_d < 0 exactly when det F < 0 (det F = " << det << ")";
  }
  const Eigen::JacobiSVD<Mat<D>> reference(F);
  const Eigen::Matrix<Real, D, 1> expected = reference.singularValues();
  ASSERT_LE((svd.sigma.cwiseAbs() - expected).norm(), kTolerance * scale) << expected.transpose();
}

template <int D>
void check_families() {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::mt19937_64 rng(20110817 + D);
  std::uniform_real_distribution<Real> uniform(-1, 1), exponent(-14, 0);
  for (int trial = 0; trial < 20000; ++trial) {
    const Mat<D> A = random_matrix<D>(rng);
    expect_polar_svd<D>(A, "random");
    expect_polar_svd<D>(random_rotation<D>(rng), "rotation");
    expect_polar_svd<D>(Mat<D>::Identity() + random_matrix<D>(rng, 1e-6), "near identity");
    expect_polar_svd<D>(random_rotation<D>(rng) * (Mat<D>::Identity() + random_matrix<D>(rng, 0.05)),
                        "rotated, moderately deformed");
    Vec tiny = Vec::Constant(1) + 0.5 * Vec::NullaryExpr([&] { return uniform(rng); });
    tiny(D - 1) = std::pow(10.0, exponent(rng));
    expect_polar_svd<D>(with_singular_values<D>(rng, tiny), "one tiny singular value");
    Vec two_tiny = Vec::Constant(std::pow(10.0, exponent(rng)));
    two_tiny(0) = 1;
    if (D == 3) two_tiny(1) = std::pow(10.0, exponent(rng));
    expect_polar_svd<D>(with_singular_values<D>(rng, two_tiny), "all but one tiny");
    const Real r = 1 + 0.5 * uniform(rng);
    Vec repeated = Vec::Constant(r);
    if (trial % 2) repeated(D - 1) *= 1 + 1e-9 * uniform(rng);
    expect_polar_svd<D>(with_singular_values<D>(rng, repeated), "repeated singular values");
    Mat<D> inverted = Mat<D>::Identity() + 0.3 * A;
    if (inverted.determinant() > 0) inverted.row(0) *= -1;
    expect_polar_svd<D>(inverted, "inverted");
    expect_polar_svd<D>(Mat<D>(Vec::NullaryExpr([&] { return uniform(rng); }).asDiagonal()), "diagonal");
    const Vec u = Vec::NullaryExpr([&] { return uniform(rng); }),
              v = Vec::NullaryExpr([&] { return uniform(rng); });
    expect_polar_svd<D>(u * v.transpose(), "rank one");
  }
  expect_polar_svd<D>(Mat<D>::Zero(), "zero");
  expect_polar_svd<D>(-Mat<D>::Identity(), "minus identity");
}

TEST(PolarSvd, ReconstructsAndOrdersIn2D) { check_families<2>(); }
TEST(PolarSvd, ReconstructsAndOrdersIn3D) { check_families<3>(); }

template <int D>
void check_identity_is_exact() {
  const PolarSvd<D> svd = polar_svd<D>(Mat<D>::Identity());
  EXPECT_EQ(svd.U, Mat<D>::Identity());
  EXPECT_EQ(svd.V, Mat<D>::Identity());
  EXPECT_EQ(svd.sigma, (Eigen::Matrix<Real, D, 1>::Ones()));
  EXPECT_EQ(polar_rotation<D>(Mat<D>::Identity()), Mat<D>::Identity());
}

TEST(PolarSvd, IdentityGivesIdentityFactorsExactly) {
  check_identity_is_exact<2>();
  check_identity_is_exact<3>();
}

TEST(PolarSvd, InvertedDiagonalPutsTheNegativeValueLast) {
  const PolarSvd<3> svd = polar_svd<3>(Eigen::Vector3d(-0.5, 2, 1).asDiagonal().toDenseMatrix());
  EXPECT_NEAR(svd.sigma(0), 2, 1e-15);
  EXPECT_NEAR(svd.sigma(1), 1, 1e-15);
  EXPECT_NEAR(svd.sigma(2), -0.5, 1e-15);
  const PolarSvd<2> svd2 = polar_svd<2>(Eigen::Vector2d(3, -0.25).asDiagonal().toDenseMatrix());
  EXPECT_NEAR(svd2.sigma(0), 3, 1e-15);
  EXPECT_NEAR(svd2.sigma(1), -0.25, 1e-15);
}

template <int D>
void check_polar_rotation() {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 1000; ++trial) {
    const Mat<D> R = random_rotation<D>(rng);
    const Mat<D> A = random_matrix<D>(rng, 0.2);
    const Mat<D> S = Mat<D>::Identity() + 0.5 * (A + A.transpose());  // symmetric positive definite here
    const Mat<D> polar = polar_rotation<D>(R * S);
    EXPECT_LE((polar - R).norm(), 1e-12);
  }
}

TEST(PolarSvd, PolarRotationRecoversTheRotationOfRS) {
  check_polar_rotation<2>();
  check_polar_rotation<3>();
}

// The 3D Newton fast path of polar_rotation against U V^T of the SVD, from small strain to
// stretches of 1e3 and near-inversion; inverted F takes the SVD path and keeps det R = +1.
TEST(PolarSvd, PolarRotationNewtonPathMatchesTheSvd) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<Real> log_stretch(-3.5, 3.5);
  for (int trial = 0; trial < 20000; ++trial) {
    const Real range = trial < 5000 ? 0.01 : 1.0;
    Eigen::Matrix<Real, 3, 1> sigma;
    for (int a = 0; a < 3; ++a) sigma(a) = std::exp(range * log_stretch(rng));
    if (trial % 7 == 0) sigma(2) = -sigma(2);  // inverted
    const Mat<3> F = random_rotation<3>(rng) * sigma.asDiagonal() * random_rotation<3>(rng).transpose();
    const PolarSvd<3> svd = polar_svd(F);
    const Mat<3> R = polar_rotation<3>(F);
    ASSERT_LE((R - svd.U * svd.V.transpose()).norm(), 1e-11) << F;
    ASSERT_NEAR(R.determinant(), 1.0, 1e-12);
  }
}

// The batched iteration gives each matrix the rotation of the scalar one, whatever its neighbours.
TEST(PolarSvd, PolarRotationBatchMatchesOneByOne) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<Real> log_stretch(-2, 2);
  std::vector<Real> F(9 * 1000), R(9 * 1000), alone(9);
  for (std::size_t n = 0; n < 1000; ++n) {
    Eigen::Matrix<Real, 3, 1> sigma;
    for (int a = 0; a < 3; ++a) sigma(a) = std::exp((n % 3 == 0 ? 0.01 : 1.0) * log_stretch(rng));
    if (n % 11 == 0) sigma(2) = -sigma(2);
    const Mat<3> M = random_rotation<3>(rng) * sigma.asDiagonal() * random_rotation<3>(rng).transpose();
    Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(F.data() + 9 * n) = M;
  }
  for (std::size_t n = 0; n < 1000; n += kPolarBatch)
    polar_rotation_batch(F.data() + 9 * n, R.data() + 9 * n,
                         static_cast<int>(std::min<std::size_t>(kPolarBatch, 1000 - n)));
  for (std::size_t n = 0; n < 1000; ++n) {
    const Mat<3> M = Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(F.data() + 9 * n);
    const Mat<3> batch = Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(R.data() + 9 * n);
    ASSERT_LE((batch - polar_rotation<3>(M)).norm(), 1e-12) << n;
    polar_rotation_batch(F.data() + 9 * n, alone.data(), 1);  // alone in its batch: the same bits
    ASSERT_EQ(std::memcmp(alone.data(), R.data() + 9 * n, 9 * sizeof(Real)), 0) << n;
  }
}

// polar_svd_batch on lanes: the factors of each matrix unpacked from the batch's outputs.
template <int D>
using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;

template <int D>
std::vector<PolarSvd<D>> svd_in_batches(const std::vector<Mat<D>>& matrices, std::size_t batch) {
  const std::size_t n = matrices.size();
  std::vector<Real> F(D * D * n), U(D * D * n), sigma(D * n), V(D * D * n);
  for (std::size_t i = 0; i < n; ++i) Eigen::Map<RowMat<D>>(F.data() + D * D * i) = matrices[i];
  for (std::size_t first = 0; first < n; first += batch)
    polar_svd_batch<D>(F.data() + D * D * first, U.data() + D * D * first, sigma.data() + D * first,
                       V.data() + D * D * first, static_cast<int>(std::min(batch, n - first)));
  std::vector<PolarSvd<D>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].U = Eigen::Map<RowMat<D>>(U.data() + D * D * i);
    out[i].sigma = Eigen::Map<Eigen::Matrix<Real, D, 1>>(sigma.data() + D * i);
    out[i].V = Eigen::Map<RowMat<D>>(V.data() + D * D * i);
  }
  return out;
}

// The batch's factors of F: polar_svd's conventions, F reconstructed, and polar_svd's σ.
template <int D>
void expect_batch_svd(const Mat<D>& F, const PolarSvd<D>& svd, const std::string& what) {
  SCOPED_TRACE(what);
  const Real scale = std::max(F.norm(), Real(1e-300));
  const Mat<D> I = Mat<D>::Identity();
  ASSERT_LE((svd.U * svd.sigma.asDiagonal() * svd.V.transpose() - F).norm(), kTolerance * scale) << "F =\n"
                                                                                                 << F;
  ASSERT_LE((svd.U.transpose() * svd.U - I).norm(), kTolerance) << F;
  ASSERT_LE((svd.V.transpose() * svd.V - I).norm(), kTolerance) << F;
  ASSERT_NEAR(svd.U.determinant(), 1.0, kTolerance);
  ASSERT_NEAR(svd.V.determinant(), 1.0, kTolerance);
  for (int i = 0; i + 1 < D; ++i) {
    ASSERT_GE(svd.sigma(i), 0.0) << "only the last singular value may be negative";
    ASSERT_GE(svd.sigma(i) - std::abs(svd.sigma(i + 1)), -kTolerance * scale) << "ordering";
  }
  const PolarSvd<D> reference = polar_svd<D>(F);
  ASSERT_LE((svd.sigma - reference.sigma).norm(), kTolerance * scale)
      << svd.sigma.transpose() << " against " << reference.sigma.transpose();
}

// The families of check_families (random, rotations, near identity, tiny, repeated, inverted,
// diagonal, rank one) and the exact cases, through the batch.
template <int D>
std::vector<std::pair<Mat<D>, std::string>> batch_cases() {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::mt19937_64 rng(20260 + D);
  std::uniform_real_distribution<Real> uniform(-1, 1), exponent(-14, 0), log_stretch(-2, 2);
  std::vector<std::pair<Mat<D>, std::string>> cases;
  for (int trial = 0; trial < 2000; ++trial) {
    const Mat<D> A = random_matrix<D>(rng);
    cases.emplace_back(A, "random");
    cases.emplace_back(random_rotation<D>(rng), "rotation");
    cases.emplace_back(Mat<D>::Identity() + random_matrix<D>(rng, 1e-6), "near identity");
    Vec stretch = Vec::NullaryExpr([&] { return std::exp(log_stretch(rng)); });
    cases.emplace_back(with_singular_values<D>(rng, stretch), "stretched");
    Vec tiny = Vec::Constant(1) + 0.5 * Vec::NullaryExpr([&] { return uniform(rng); });
    tiny(D - 1) = std::pow(10.0, exponent(rng));
    cases.emplace_back(with_singular_values<D>(rng, tiny), "one tiny singular value");
    Vec two_tiny = Vec::Constant(std::pow(10.0, exponent(rng)));
    two_tiny(0) = 1;
    cases.emplace_back(with_singular_values<D>(rng, two_tiny), "all but one tiny");
    Vec repeated = Vec::Constant(1 + 0.5 * uniform(rng));
    if (trial % 2) repeated(D - 1) *= 1 + 1e-9 * uniform(rng);
    if (trial % 3 == 0) repeated(0) *= 1.5;  // 3D: a pair repeated below the largest
    cases.emplace_back(with_singular_values<D>(rng, repeated), "repeated singular values");
    Mat<D> inverted = Mat<D>::Identity() + 0.3 * A;
    if (inverted.determinant() > 0) inverted.row(0) *= -1;
    cases.emplace_back(inverted, "inverted");
    cases.emplace_back(Mat<D>(Vec::NullaryExpr([&] { return uniform(rng); }).asDiagonal()), "diagonal");
    const Vec u = Vec::NullaryExpr([&] { return uniform(rng); }),
              v = Vec::NullaryExpr([&] { return uniform(rng); });
    cases.emplace_back(u * v.transpose(), "rank one");
  }
  cases.emplace_back(Mat<D>::Zero(), "zero");
  cases.emplace_back(Mat<D>::Identity(), "identity");
  cases.emplace_back(-Mat<D>::Identity(), "minus identity");
  cases.emplace_back(Mat<D>(Vec::LinSpaced(1, 2).asDiagonal()), "sorted diagonal");
  return cases;
}

template <int D>
void check_batch_svd() {
  const auto cases = batch_cases<D>();
  std::vector<Mat<D>> matrices;
  for (const auto& c : cases) matrices.push_back(c.first);
  const std::vector<PolarSvd<D>> svd = svd_in_batches<D>(matrices, kPolarBatch);
  for (std::size_t i = 0; i < cases.size(); ++i) expect_batch_svd<D>(cases[i].first, svd[i], cases[i].second);
}

TEST(PolarSvdBatch, ReconstructsAndMatchesPolarSvdIn2D) { check_batch_svd<2>(); }
TEST(PolarSvdBatch, ReconstructsAndMatchesPolarSvdIn3D) { check_batch_svd<3>(); }

template <int D>
void check_identity_batch_is_exact() {
  const std::vector<PolarSvd<D>> svd = svd_in_batches<D>({Mat<D>::Identity()}, 1);
  EXPECT_EQ(svd[0].U, Mat<D>::Identity());
  EXPECT_EQ(svd[0].V, Mat<D>::Identity());
  EXPECT_EQ(svd[0].sigma, (Eigen::Matrix<Real, D, 1>::Ones()));
}

TEST(PolarSvdBatch, IdentityGivesIdentityFactorsExactly) {
  check_identity_batch_is_exact<2>();
  check_identity_batch_is_exact<3>();
}

template <int D>
bool same_bits(const PolarSvd<D>& a, const PolarSvd<D>& b) {
  return std::memcmp(a.U.data(), b.U.data(), sizeof(Real) * D * D) == 0 &&
         std::memcmp(a.sigma.data(), b.sigma.data(), sizeof(Real) * D) == 0 &&
         std::memcmp(a.V.data(), b.V.data(), sizeof(Real) * D * D) == 0;
}

// Each matrix's factors are the same bits at every lane, in batches of every size, whatever its
// neighbours (slow-converging, inverted, zero): the solver batches particles by block.
template <int D>
void check_batch_lane_independence() {
  const auto cases = batch_cases<D>();
  std::vector<Mat<D>> pool;
  for (std::size_t i = 0; i < cases.size(); i += 7) pool.push_back(cases[i].first);
  std::vector<Mat<D>> neighbours;
  for (std::size_t i = 3; i < cases.size(); i += 5) neighbours.push_back(cases[i].first);
  std::mt19937_64 rng(77);
  for (std::size_t m = 0; m < pool.size(); m += 9) {
    const PolarSvd<D> alone = svd_in_batches<D>({pool[m]}, 1)[0];
    for (int size = 1; size <= kPolarBatch; ++size)
      for (int lane = 0; lane < size; ++lane) {
        std::vector<Mat<D>> batch(size);
        for (Mat<D>& n : batch) n = neighbours[rng() % neighbours.size()];
        batch[lane] = pool[m];
        const PolarSvd<D> svd = svd_in_batches<D>(batch, kPolarBatch)[lane];
        ASSERT_TRUE(same_bits<D>(svd, alone)) << "lane " << lane << " of " << size << ", F =\n" << pool[m];
      }
  }
}

TEST(PolarSvdBatch, EachLaneIsIndependentOfItsBatchIn2D) { check_batch_lane_independence<2>(); }
TEST(PolarSvdBatch, EachLaneIsIndependentOfItsBatchIn3D) { check_batch_lane_independence<3>(); }

// Not asserted: the speed on this machine, for the record (tests run in the Release build).
TEST(PolarSvd, TimingAgainstEigenJacobiSvd) {
  std::mt19937_64 rng(11);
  std::vector<Mat<3>> matrices(4096);
  for (Mat<3>& F : matrices) F = random_rotation<3>(rng) * (Mat<3>::Identity() + random_matrix<3>(rng, 0.05));
  const int repeats = 50;
  const auto time_ns = [&](const std::function<Real(const Mat<3>&)>& decompose) {
    Real checksum = 0;
    // CPU time of this thread: the figure stays meaningful on a shared, oversubscribed machine.
    timespec start{}, stop{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    for (int r = 0; r < repeats; ++r)
      for (const Mat<3>& F : matrices) checksum += decompose(F);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &stop);
    EXPECT_TRUE(std::isfinite(checksum));
    const double ns = 1e9 * double(stop.tv_sec - start.tv_sec) + double(stop.tv_nsec - start.tv_nsec);
    return ns / (repeats * matrices.size());
  };
  const double ours = time_ns([](const Mat<3>& F) {
    const PolarSvd<3> svd = polar_svd(F);
    return svd.sigma(2) + svd.U(1, 2) + svd.V(2, 0);
  });
  Eigen::JacobiSVD<Mat<3>> eigen_svd;
  const double eigen = time_ns([&](const Mat<3>& F) {
    eigen_svd.compute(F, Eigen::ComputeFullU | Eigen::ComputeFullV);
    return eigen_svd.singularValues()(2) + eigen_svd.matrixU()(1, 2) + eigen_svd.matrixV()(2, 0);
  });
  const double rotation = time_ns([](const Mat<3>& F) { return polar_rotation<3>(F)(1, 2); });
  std::vector<Real> packed(9 * matrices.size()), rotations(9 * matrices.size());
  for (std::size_t n = 0; n < matrices.size(); ++n)
    Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(packed.data() + 9 * n) = matrices[n];
  std::size_t next = 0;
  const double batched = time_ns([&](const Mat<3>&) {
    if (next % kPolarBatch == 0)
      polar_rotation_batch(packed.data() + 9 * next, rotations.data() + 9 * next, kPolarBatch);
    const Real r = rotations[9 * next + 5];
    next = (next + 1) % matrices.size();
    return r;
  });
  std::vector<Real> U(9 * kPolarBatch), sigma(3 * kPolarBatch), V(9 * kPolarBatch);
  next = 0;
  const double batched_svd = time_ns([&](const Mat<3>&) {
    if (next % kPolarBatch == 0)
      polar_svd_batch<3>(packed.data() + 9 * next, U.data(), sigma.data(), V.data(), kPolarBatch);
    const Real r = U[9 * (next % kPolarBatch) + 5] + sigma[3 * (next % kPolarBatch) + 2];
    next = (next + 1) % matrices.size();
    return r;
  });
  std::printf("[ timing   ] polar_rotation_batch %.0f ns, polar_svd_batch %.0f ns per matrix\n", batched,
              batched_svd);
  std::printf(
      "[ timing   ] 3x3 polar_svd %.0f ns, Eigen::JacobiSVD %.0f ns (U, V, sigma; %.1fx), "
      "polar_rotation (Newton) %.0f ns\n",
      ours, eigen, eigen / ours, rotation);
}

}  // namespace
}  // namespace nendo
