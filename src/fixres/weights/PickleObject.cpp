// Unpickled objects, their arena and their conversion to IValues.
#include "fixres/weights/PickleObject.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "fixres/common/Error.h"

namespace fixres::models {

void PickleArena::count(size_t n) {
  values_ += n;
  FIXRES_CHECK(values_ <= kMaxPickleValues, WeightsError, source_, " holds more than ",
               kMaxPickleValues, " values (objects and references to them): not a weight file");
}

void PickleArena::checkMarks(size_t openMarks) const {
  FIXRES_CHECK(openMarks < static_cast<size_t>(kMaxPickleDepth), WeightsError, source_,
               " nests too deeply (more than ", kMaxPickleDepth, " MARKs open)");
}

void PickleArena::nest(const PickleObjectPtr& container, const PickleObjectPtr& item) {
  // The path through this link: the levels above the container, the link, the levels below.
  FIXRES_CHECK(container->depth + 1 + item->height < kMaxPickleDepth, WeightsError, source_,
               " nests too deeply (more than ", kMaxPickleDepth, " levels)");
  container->height = std::max(container->height, item->height + 1);
  item->depth = std::max(item->depth, container->depth + 1);
}

void PickleArena::add(const PickleObjectPtr& container, const PickleObjectPtr& item) {
  count();
  nest(container, item);
  container->items.push_back(item);
}

void PickleArena::addEntry(const PickleObjectPtr& container, const PickleObjectPtr& key,
                           const PickleObjectPtr& value) {
  count(2);
  nest(container, key);
  nest(container, value);
  container->entries.emplace_back(key, value);
}

PickleObjectPtr PickleArena::make(PickleObject::Kind kind) {
  count();
  PickleObject& o = objects_.emplace_back();
  o.kind = kind;
  return &o;
}
PickleObjectPtr PickleArena::makeBool(bool value) {
  auto o = make(PickleObject::Kind::kBool);
  o->b = value;
  o->i = value;
  return o;
}
PickleObjectPtr PickleArena::makeInt(int64_t value) {
  auto o = make(PickleObject::Kind::kInt);
  o->i = value;
  return o;
}
PickleObjectPtr PickleArena::makeFloat(double value) {
  auto o = make(PickleObject::Kind::kFloat);
  o->f = value;
  return o;
}
PickleObjectPtr PickleArena::makeStr(PickleObject::Kind kind, std::string value) {
  auto o = make(kind);
  o->s = std::move(value);
  return o;
}
PickleObjectPtr PickleArena::makeTuple(const std::vector<PickleObjectPtr>& items) {
  auto o = make(PickleObject::Kind::kTuple);
  for (const auto& x : items) add(o, x);
  return o;
}
PickleObjectPtr PickleArena::makeList(const std::vector<PickleObjectPtr>& items) {
  auto o = make(PickleObject::Kind::kList);
  for (const auto& x : items) add(o, x);
  return o;
}

const char* kindName(PickleObject::Kind kind) {
  using Kind = PickleObject::Kind;
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kStr:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kTuple:
      return "tuple";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kGlobal:
      return "global";
    case Kind::kStorage:
      return "storage";
    case Kind::kTensor:
      return "tensor";
    case Kind::kNumpyDtype:
      return "numpy dtype";
    case Kind::kOpaque:
      return "object";
  }
  return "?";
}

namespace {

class Converter {
 public:
  explicit Converter(const std::string& source) : source_(source) {}

  c10::IValue convert(const PickleObject* o, int depth = 0) {
    FIXRES_CHECK(depth < kMaxPickleDepth, WeightsError, source_, " nests too deeply (more than ",
                 kMaxPickleDepth, " levels)");
    auto it = done_.find(o);
    if (it != done_.end()) return it->second;
    // A container reached again inside itself would nest without end (and, held twice, take
    // time exponential in the depth limit): refused as the depth limit would.
    FIXRES_CHECK(open_.insert(o).second, WeightsError, source_, " nests too deeply");
    c10::IValue v = convertNew(o, depth);
    open_.erase(o);
    done_.emplace(o, v);
    return v;
  }

 private:
  static c10::TypePtr commonType(const std::vector<c10::IValue>& vs) {
    if (vs.empty()) return c10::AnyType::get();
    auto same = [&](auto pred) { return std::all_of(vs.begin(), vs.end(), pred); };
    if (same([](const c10::IValue& v) { return v.isString(); })) return c10::StringType::get();
    if (same([](const c10::IValue& v) { return v.isTensor(); })) return c10::TensorType::get();
    if (same([](const c10::IValue& v) { return v.isInt(); })) return c10::IntType::get();
    if (same([](const c10::IValue& v) { return v.isDouble(); })) return c10::FloatType::get();
    return c10::AnyType::get();
  }

  c10::IValue convertNew(const PickleObject* o, int depth) {
    using Kind = PickleObject::Kind;
    switch (o->kind) {
      case Kind::kNone:
      case Kind::kOpaque:
      case Kind::kNumpyDtype:
      case Kind::kStorage:
        return c10::IValue();
      case Kind::kBool:
        return c10::IValue(o->b);
      case Kind::kInt:
        return c10::IValue(o->i);
      case Kind::kFloat:
        return c10::IValue(o->f);
      case Kind::kStr:
      case Kind::kBytes:
      case Kind::kGlobal:
        return c10::IValue(o->s);
      case Kind::kTensor:
        return c10::IValue(o->tensor);
      case Kind::kTuple: {
        std::vector<c10::IValue> items;
        for (const auto& x : o->items) items.push_back(convert(x, depth + 1));
        return c10::ivalue::Tuple::create(std::move(items));
      }
      case Kind::kList: {
        std::vector<c10::IValue> items;
        for (const auto& x : o->items) items.push_back(convert(x, depth + 1));
        c10::impl::GenericList list(commonType(items));
        for (auto& x : items) list.push_back(std::move(x));
        return list;
      }
      case Kind::kDict: {
        std::vector<c10::IValue> keys, values;
        for (const auto& [k, v] : o->entries) {
          keys.push_back(convert(k, depth + 1));
          values.push_back(convert(v, depth + 1));
          const auto& key = keys.back();
          // (The keys c10::Dict can hash; None, e.g. from a key of an unknown class, it cannot.)
          FIXRES_CHECK(key.isString() || key.isInt() || key.isDouble() || key.isBool(),
                       WeightsError, "unsupported dict key of type ", key.tagKind(), " in ",
                       source_);
        }
        c10::impl::GenericDict dict(commonType(keys), commonType(values));
        for (size_t k = 0; k < keys.size(); ++k) dict.insert_or_assign(keys[k], values[k]);
        return dict;
      }
    }
    return c10::IValue();
  }

  const std::string& source_;
  std::unordered_map<const PickleObject*, c10::IValue> done_;
  std::unordered_set<const PickleObject*> open_;  // being converted
};

}  // namespace

c10::IValue toIValue(const PickleObjectPtr& root, const std::string& source) {
  return Converter(source).convert(root);
}

}  // namespace fixres::models
