// IDX reader (the MNIST / Fashion-MNIST format): a big-endian header, then uint8 data.
//
// The header's dimensions are untrusted: they are bounded before anything is sized from them, and
// the data is read in blocks into a buffer that grows only with bytes actually present, so a
// truncated or lying file is reported as an error rather than a huge allocation or a hang.

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/data/readers.h"
#include "algorithms/data/row_sets.h"

namespace starling::algorithms {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // uint8 data, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // uint8 data, 1 dimension
// Far above any IDX data set in use (Fashion-MNIST's train images are 47 million bytes); a header
// that claims more is corrupt or not IDX.
constexpr uint64_t kMaxDataBytes = 1000000000;

std::string Hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// An IDX file, gzipped or not: zlib's gzread recognises the gzip magic bytes and passes any other
// file through unchanged.
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) Fail("cannot open (is a directory)");
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      Fail(std::string("cannot open (") + (errno != 0 ? std::strerror(errno) : "out of memory") +
           ")");
    }
  }
  ~IdxFile() { gzclose(file_); }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  const std::string& path() const { return path_; }

  // Appends up to `count` bytes to *out and returns how many it read: fewer only at the end of
  // the file.
  uint64_t Read(uint64_t count, std::vector<uint8_t>* out) {
    constexpr uint64_t kBlock = 1 << 20;
    uint64_t done = 0;
    while (done < count) {
      const size_t old_size = out->size();
      const unsigned want = static_cast<unsigned>(std::min(kBlock, count - done));
      out->resize(old_size + want);
      const int n = gzread(file_, out->data() + old_size, want);
      if (n < 0) FailRead();
      out->resize(old_size + static_cast<size_t>(n));
      if (n == 0) break;
      done += static_cast<uint64_t>(n);
    }
    return done;
  }

  // One big-endian 32-bit header word; `what` names it for the message if the file ends first.
  uint32_t ReadWord(const char* what) {
    std::vector<uint8_t> bytes;
    if (Read(4, &bytes) != 4) {
      Fail(std::string("truncated header: the file ends before the ") + what);
    }
    return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
           uint32_t{bytes[3]};
  }

  bool AtEnd() {
    std::vector<uint8_t> byte;
    return Read(1, &byte) == 0;
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what);
  }

 private:
  [[noreturn]] void FailRead() const {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    std::string reason = code == Z_ERRNO ? std::strerror(errno) : message;
    // zlib prefixes its messages with the path; we put the path first ourselves.
    const std::string prefix = path_ + ": ";
    if (reason.compare(0, prefix.size(), prefix) == 0) reason.erase(0, prefix.size());
    Fail("read error (" + reason + ")");
  }

  std::string path_;
  gzFile file_ = nullptr;
};

void CheckMagic(const IdxFile& file, uint32_t found, uint32_t expected) {
  if (found == expected) return;
  const auto describe = [](uint32_t magic) -> std::string {
    if (magic == kImagesMagic) return "an IDX3 uint8 images file";
    if (magic == kLabelsMagic) return "an IDX1 uint8 labels file";
    return "not a uint8 IDX file";
  };
  file.Fail("wrong magic number " + Hex(found) + " (" + describe(found) + "); expected " +
            Hex(expected) + " (" + describe(expected) + ")");
}

// Reads exactly `count` data bytes and checks that nothing follows them.
std::vector<uint8_t> ReadData(IdxFile* file, uint64_t count, const std::string& declared) {
  std::vector<uint8_t> data;
  // Reserving up front saves the copies of a growing buffer; capped, so that a header that lies
  // about the size costs at most this much before the file runs out.
  constexpr uint64_t kMaxReserve = uint64_t{64} << 20;
  data.reserve(static_cast<size_t>(std::min(count, kMaxReserve)));
  const uint64_t got = file->Read(count, &data);
  if (got < count) {
    file->Fail("truncated: the header declares " + declared + " (" + std::to_string(count) +
               " data bytes) but the file holds only " + std::to_string(got));
  }
  if (!file->AtEnd()) file->Fail("unexpected data after the " + declared + " the header declares");
  return data;
}

// Both files opened and their headers checked; the data not yet read.
struct IdxHeaders {
  IdxHeaders(const std::string& images, const std::string& labels)
      : image_file(images), label_file(labels) {
    CheckMagic(image_file, image_file.ReadWord("magic number"), kImagesMagic);
    count = image_file.ReadWord("image count");
    const uint32_t rows = image_file.ReadWord("row count");
    const uint32_t cols = image_file.ReadWord("column count");
    declared = std::to_string(count) + " images of " + std::to_string(rows) + "x" +
               std::to_string(cols) + " pixels";
    if (count == 0 || rows == 0 || cols == 0) image_file.Fail("header declares " + declared);
    // Each factor is below 2^32, so the first product cannot overflow; the second is only formed
    // once the first is known to be small.
    pixels = uint64_t{rows} * cols;
    if (pixels > kMaxDataBytes || count > kMaxDataBytes / pixels) {
      image_file.Fail("header declares " + declared + ", more than " +
                      std::to_string(kMaxDataBytes) + " bytes; not a plausible IDX file");
    }

    CheckMagic(label_file, label_file.ReadWord("magic number"), kLabelsMagic);
    const uint32_t label_count = label_file.ReadWord("label count");
    if (label_count != count) {
      throw std::runtime_error(labels + ": holds " + std::to_string(label_count) + " labels but " +
                               images + " holds " + std::to_string(count) + " images");
    }
  }

  Vec ReadLabels() {
    const std::vector<uint8_t> bytes =
        ReadData(&label_file, count, std::to_string(count) + " labels");
    Vec labels(count);
    for (uint32_t i = 0; i < count; ++i) labels[i] = bytes[i];
    return labels;
  }

  IdxFile image_file;
  IdxFile label_file;
  uint32_t count = 0;
  uint64_t pixels = 0;
  std::string declared;
};

}  // namespace

IdxImages ReadIdxImages(const std::string& images, const std::string& labels) {
  IdxHeaders headers(images, labels);
  IdxImages out;
  out.source = images;
  out.pixels = static_cast<int>(headers.pixels);
  out.bytes = ReadData(&headers.image_file, headers.count * headers.pixels, headers.declared);
  out.labels = headers.ReadLabels();
  return out;
}

std::vector<IdxImages> ReadIdxImageSets(const std::string& images, const std::string& labels,
                                        RowSets* sets, Vec* all_labels, int* pixels) {
  IdxHeaders headers(images, labels);
  *pixels = static_cast<int>(headers.pixels);
  std::vector<IdxImages> out(sets->count());
  std::vector<std::vector<int>> images_of(sets->count());  // file row of each set row
  for (int k = 0; k < sets->count(); ++k) {
    out[k].source = images;
    out[k].pixels = static_cast<int>(headers.pixels);
    out[k].bytes.reserve(static_cast<size_t>(sets->size(k)) * headers.pixels);
  }
  // The images in blocks of whole images; the kept ones are copied, as bytes, into their sets.
  const uint64_t per_block = std::max<uint64_t>(1, (uint64_t{1} << 20) / headers.pixels);
  const uint64_t total = headers.count * headers.pixels;
  std::vector<uint8_t> block;
  uint64_t got = 0;
  for (uint64_t first = 0; first < headers.count; first += per_block) {
    const uint64_t n = std::min<uint64_t>(per_block, headers.count - first);
    block.clear();
    const uint64_t read = headers.image_file.Read(n * headers.pixels, &block);
    got += read;
    if (read < n * headers.pixels) {
      headers.image_file.Fail("truncated: the header declares " + headers.declared + " (" +
                              std::to_string(total) + " data bytes) but the file holds only " +
                              std::to_string(got));
    }
    for (uint64_t i = 0; i < n; ++i) {
      const int image = static_cast<int>(first + i);
      const uint8_t* in = block.data() + i * headers.pixels;
      sets->ForRow(image, [&](int k) {
        out[k].bytes.insert(out[k].bytes.end(), in, in + headers.pixels);
        images_of[k].push_back(image);
      });
    }
  }
  if (!headers.image_file.AtEnd()) {
    headers.image_file.Fail("unexpected data after the " + headers.declared +
                            " the header declares");
  }
  sets->CheckAllSeen(static_cast<int>(headers.count), images);
  *all_labels = headers.ReadLabels();
  for (int k = 0; k < sets->count(); ++k) {
    out[k].labels.resize(static_cast<Eigen::Index>(images_of[k].size()));
    for (size_t r = 0; r < images_of[k].size(); ++r) {
      out[k].labels[static_cast<Eigen::Index>(r)] = (*all_labels)[images_of[k][r]];
    }
  }
  return out;
}

StreamedRows ReadIdxRows(const std::string& images, const std::string& labels, RowSets* sets) {
  StreamedRows out;
  out.table.is_sparse = false;
  out.table.source = images;
  if (sets == nullptr) {
    IdxHeaders headers(images, labels);
    out.table.num_features = static_cast<int>(headers.pixels);
    out.table.labels = headers.ReadLabels();
    return out;
  }
  std::vector<IdxImages> compact =
      ReadIdxImageSets(images, labels, sets, &out.table.labels, &out.table.num_features);
  // Reserved: Dataset's move may copy (Eigen's sparse matrix), and a vector that grows would
  // then copy every set already converted.
  out.sets.reserve(compact.size());
  for (IdxImages& set : compact) {
    out.sets.push_back(IdxImagesToDataset(set, nullptr));
    set = IdxImages();  // its bytes, freed before the next set is converted
  }
  return out;
}

Dataset IdxImagesToDataset(const IdxImages& images, const std::vector<int>* rows) {
  const int count = rows != nullptr ? static_cast<int>(rows->size()) : images.count();
  Dataset data;
  data.is_sparse = false;
  data.source = images.source;
  data.num_features = images.pixels;
  data.dense.resize(count, images.pixels);
  data.labels.resize(count);
  double* out = data.dense.data();  // row-major: image i's pixels are contiguous, as in the file
  for (int r = 0; r < count; ++r) {
    const int image = rows != nullptr ? (*rows)[r] : r;
    if (image < 0 || image >= images.count()) {
      throw std::out_of_range(images.source + ": image " + std::to_string(image) +
                              " is outside 0.." + std::to_string(images.count() - 1));
    }
    const uint8_t* in = images.bytes.data() + static_cast<size_t>(image) * images.pixels;
    for (int k = 0; k < images.pixels; ++k) *out++ = in[k] / 255.0;
    data.labels[r] = images.labels[image];
  }
  return data;
}

Dataset ReadIdx(const std::string& images, const std::string& labels) {
  return IdxImagesToDataset(ReadIdxImages(images, labels), nullptr);
}

std::string IdxLabelsPathFor(const std::string& images) {
  const size_t slash = images.find_last_of('/');
  const size_t name_begin = slash == std::string::npos ? 0 : slash + 1;
  // "-images-idx3-ubyte" is the Fashion-MNIST and LeCun naming; some MNIST copies use a dot.
  for (const char* separator : {"-", "."}) {
    const std::string pattern = std::string("images") + separator + "idx3-ubyte";
    const size_t at = images.rfind(pattern);
    if (at == std::string::npos || at < name_begin) continue;
    const std::string rest = images.substr(at + pattern.size());
    if (rest.empty() || rest == ".gz") {
      return images.substr(0, at) + "labels" + separator + "idx1-ubyte" + rest;
    }
  }
  throw std::runtime_error(images +
                           ": not an IDX images file name (expected ...-images-idx3-ubyte[.gz], "
                           "whose labels are in ...-labels-idx1-ubyte[.gz])");
}

}  // namespace starling::algorithms
