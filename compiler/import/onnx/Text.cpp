//===- Text.cpp - ONNX TfIdfVectorizer -> kiln ----------------------------===//
//
// TfIdfVectorizer's n-gram pool is an attribute, so the n-grams to count are
// known here. For each n-gram length n and skip s, the n tokens of every
// window are strided slices of the input; they are compared with every pool
// n-gram of that length at once (kiln.equal broadcast against a constant
// row per token position), the comparisons and-ed, and the matches counted
// over the window positions. The counts are weighted per the mode and
// gathered into the output coordinates ngram_indexes gives. Integer inputs
// only: Kiln has no string tensors.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The largest output TfIdfVectorizer produces per row (its coordinates are
/// a constant gather index).
static constexpr int64_t kMaxTfIdfOutputs = int64_t(1) << 20;

static LogicalResult convertTfIdfVectorizer(NodeContext &node) {
  if (node.hasAttr("pool_strings")) {
    node.emitError() << "string pools (pool_strings) are not supported: Kiln "
                        "has no string tensors";
    return failure();
  }
  if (!node.hasAttr("pool_int64s")) {
    node.emitError() << "attribute 'pool_int64s' is missing";
    return failure();
  }
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  Type element = type.getElementType();
  if (!element.isSignlessInteger(32) && !element.isSignlessInteger(64)) {
    node.emitError() << "expected an int32 or int64 input, got " << type;
    return failure();
  }
  if (type.getRank() != 1 && type.getRank() != 2) {
    node.emitError() << "expected an input of rank 1 or 2, got " << type;
    return failure();
  }
  std::string mode = node.stringAttr("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") {
    node.emitError() << "mode must be TF, IDF or TFIDF, got '" << mode << "'";
    return failure();
  }
  int64_t minLength = node.intAttr("min_gram_length", 0);
  int64_t maxLength = node.intAttr("max_gram_length", 0);
  int64_t maxSkip = node.intAttr("max_skip_count", 0);
  if (minLength < 1 || maxLength < minLength || maxSkip < 0) {
    node.emitError() << "expected 1 <= min_gram_length <= max_gram_length and "
                        "max_skip_count >= 0, got "
                     << minLength << ", " << maxLength << " and " << maxSkip;
    return failure();
  }
  SmallVector<int64_t> pool = node.intsAttr("pool_int64s");
  SmallVector<int64_t> starts = node.intsAttr("ngram_counts");
  SmallVector<int64_t> indexes = node.intsAttr("ngram_indexes");
  SmallVector<double> weights = node.floatsAttr("weights");

  // The pool's n-grams by length: level n - 1 spans [starts[n - 1], the next
  // start or the pool's end), n values each.
  SmallVector<int64_t> firstGram; // the index of each level's first n-gram
  int64_t grams = 0;
  for (auto [level, start] : llvm::enumerate(starts)) {
    int64_t end = level + 1 < starts.size() ? starts[level + 1] : pool.size();
    int64_t n = level + 1;
    if (start < 0 || end < start || end > (int64_t)pool.size() ||
        (end - start) % n != 0) {
      node.emitError() << "ngram_counts [" << llvm::interleaved(starts)
                       << "] does not split the pool of " << pool.size()
                       << " values into whole n-grams";
      return failure();
    }
    firstGram.push_back(grams);
    grams += (end - start) / n;
  }
  if ((int64_t)indexes.size() != grams ||
      (!weights.empty() && (int64_t)weights.size() != grams)) {
    node.emitError() << "the pool has " << grams << " n-grams but "
                     << indexes.size() << " ngram_indexes and "
                     << weights.size() << " weights";
    return failure();
  }
  // Output coordinate -> n-gram (or `grams`, a zero column).
  int64_t outputs = 0;
  for (int64_t index : indexes) {
    if (index < 0 || index >= kMaxTfIdfOutputs) {
      node.emitError() << "ngram_indexes holds " << index
                       << ", outside [0, " << kMaxTfIdfOutputs << ")";
      return failure();
    }
    outputs = std::max(outputs, index + 1);
  }
  SmallVector<int64_t> source(outputs, grams);
  for (auto [gram, index] : llvm::enumerate(indexes)) {
    if (source[index] != grams) {
      node.emitError() << "ngram_indexes maps n-grams " << source[index]
                       << " and " << gram << " to the same coordinate "
                       << index;
      return failure();
    }
    source[index] = gram;
  }

  OpBuilder &b = node.builder();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  int64_t length = type.getShape().back();
  int64_t rows = type.getRank() == 2 ? type.getShape()[0] : 1;
  Value tokens = node.reshape(node.cast(input, i64), {rows, length});
  // The counts of each level's n-grams, [rows, n-grams of the level]; zero
  // for the levels outside [min_gram_length, max_gram_length].
  SmallVector<Value> counts;
  for (auto [level, start] : llvm::enumerate(starts)) {
    int64_t n = level + 1;
    int64_t levelGrams = (level + 1 < starts.size() ? firstGram[level + 1]
                                                     : grams) -
                         firstGram[level];
    if (levelGrams == 0)
      continue;
    auto countsType = RankedTensorType::get({rows, levelGrams}, f32);
    Value count = node.splat(countsType, 0);
    if (n >= minLength && n <= maxLength) {
      // Token j of pool n-gram g, as a row over g.
      SmallVector<Value> poolTokens;
      for (int64_t j = 0; j < n; ++j) {
        SmallVector<int64_t> row;
        for (int64_t g = 0; g < levelGrams; ++g)
          row.push_back(pool[start + g * n + j]);
        poolTokens.push_back(ConstantOp::create(
            b, node.loc(),
            DenseIntElementsAttr::get(RankedTensorType::get({levelGrams}, i64),
                                      row)));
      }
      // Unigrams have no gaps to skip.
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : maxSkip); ++skip) {
        int64_t stride = skip + 1, positions = length - (n - 1) * stride;
        if (positions < 1)
          break;
        Value matches;
        for (int64_t j = 0; j < n; ++j) {
          Value token = node.create<SliceOp>(
              tokens, ArrayRef<int64_t>{0, j * stride},
              ArrayRef<int64_t>{rows, j * stride + positions},
              ArrayRef<int64_t>{1, 1});
          Value equal = node.create<EqualOp>(
              node.reshape(token, {rows, positions, 1}), poolTokens[j]);
          matches = matches ? node.create<AndOp>(matches, equal) : equal;
        }
        count = node.create<AddOp>(
            count, node.create<ReduceSumOp>(node.cast(matches, f32),
                                            b.getDenseI64ArrayAttr({1}),
                                            b.getBoolAttr(false)));
      }
    }
    counts.push_back(count);
  }
  // [rows, n-grams + 1]: the counts and a zero column for the coordinates
  // no n-gram maps to.
  counts.push_back(node.splat(RankedTensorType::get({rows, 1}, f32), 0));
  Value all = counts.size() == 1 ? counts.front()
                                 : node.create<ConcatOp>(counts, 1);
  if (mode == "IDF")
    all = node.create<SelectOp>(
        node.create<GreaterOp>(all, node.scalar(f32, 0)), node.scalar(f32, 1),
        node.scalar(f32, 0));
  if (mode != "TF" && !weights.empty()) {
    SmallVector<float> scale(weights.begin(), weights.end());
    scale.push_back(0);
    all = node.create<MulOp>(
        all, ConstantOp::create(
                 b, node.loc(),
                 DenseElementsAttr::get(
                     RankedTensorType::get({grams + 1}, f32),
                     ArrayRef<float>(scale))));
  }
  Value coordinates = ConstantOp::create(
      b, node.loc(),
      DenseIntElementsAttr::get(RankedTensorType::get({outputs}, i64), source));
  Value result =
      node.create<GatherOp>(all, coordinates, b.getI64IntegerAttr(1));
  if (type.getRank() == 1)
    result = node.reshape(result, {outputs});
  node.setOutput(0, result);
  return success();
}

void onnx_import::registerTextPatterns(PatternRegistry &r) {
  r.add("TfIdfVectorizer", 9, convertTfIdfVectorizer);
}
