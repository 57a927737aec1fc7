// matrix.cpp - dense row-major matrices.
#include <cassert>
#include <iostream>
#include <stdexcept>
#include <vector>

namespace linalg {

/// A dense matrix of doubles stored row by row.
class Matrix {
 public:
  Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), data_(rows * cols) {}

  /// Returns the identity matrix of size n.
  static Matrix identity(std::size_t n) {
    Matrix m(n, n);
    for (std::size_t i = 0; i < n; ++i) m(i, i) = 1.0;
    return m;
  }

  double &operator()(std::size_t r, std::size_t c) { return data_[r * cols_ + c]; }
  double operator()(std::size_t r, std::size_t c) const { return data_[r * cols_ + c]; }

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }

  /// Multiplies two matrices; throws when the shapes do not match.
  Matrix operator*(const Matrix &o) const;

 private:
  std::size_t rows_, cols_;
  std::vector<double> data_;
};

Matrix Matrix::operator*(const Matrix &o) const {
  if (cols_ != o.rows_) {
    throw std::invalid_argument("shape mismatch");
  }
  Matrix out(rows_, o.cols_);
  for (std::size_t i = 0; i < rows_; ++i)
    for (std::size_t k = 0; k < cols_; ++k) {
      double a = (*this)(i, k);
      for (std::size_t j = 0; j < o.cols_; ++j) out(i, j) += a * o(k, j);
    }
  return out;
}

/// Transposes a matrix.
template <typename M>
M transpose(const M &m) {
  M t(m.cols(), m.rows());
  for (std::size_t i = 0; i < m.rows(); ++i)
    for (std::size_t j = 0; j < m.cols(); ++j) t(j, i) = m(i, j);
  return t;
}

}  // namespace linalg

int main() {
  auto m = linalg::Matrix::identity(3);
  auto p = m * linalg::transpose(m);
  std::cout << p(1, 1) << "\n";
  return 0;
}
