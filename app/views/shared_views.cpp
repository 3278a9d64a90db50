// attnlab views: identical per-variant views merged into one (shared_views.h).
#include "app/views/shared_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace attnlab::views {

namespace {

// The title past "label: ", the part several variants' views have in common.
std::string topic(const View& v) {
  const std::string prefix = v.variants.empty() ? "" : v.variants.front() + ": ";
  return v.title.rfind(prefix, 0) == 0 ? v.title.substr(prefix.size()) : v.title;
}

// "a, b: Q scales (kernel)", or for members with different topics "a: Q scales (reference); b: …".
std::string merged_title(const std::vector<const View*>& members) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_topic;  // in the members' order
  for (const View* m : members) {
    const std::string t = topic(*m);
    auto it = std::find_if(by_topic.begin(), by_topic.end(), [&](const auto& e) { return e.first == t; });
    if (it == by_topic.end()) it = by_topic.insert(by_topic.end(), {t, {}});
    it->second.insert(it->second.end(), m->variants.begin(), m->variants.end());
  }
  std::vector<std::string> parts;
  for (const auto& [t, labels] : by_topic) parts.push_back(fmt::format("{}: {}", fmt::join(labels, ", "), t));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::string data_key(const View& v) {
  const Table t = view_as_table(v);
  std::string key;
  for (const Column& c : t.columns) key += c.key + '\x1f';
  for (const auto& row : t.rows) {
    key += '\x1e';
    for (const Cell& cell : row) key += cell.text + '\x1f';
  }
  return key;
}

std::vector<View> merge_shared(std::vector<View> views) {
  std::map<std::pair<std::string, std::string>, size_t> first;  // (panel, data) → the group's first view
  std::vector<std::vector<const View*>> groups(views.size());
  std::vector<bool> kept(views.size(), true);
  for (size_t i = 0; i < views.size(); ++i) {
    if (views[i].variants.empty()) continue;
    const auto [it, fresh] = first.try_emplace({views[i].panel, data_key(views[i])}, i);
    groups[it->second].push_back(&views[i]);
    kept[i] = fresh;
  }
  std::vector<View> out;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!kept[i]) continue;
    View v = views[i];
    if (groups[i].size() > 1) {
      v.title = merged_title(groups[i]);
      v.variants.clear();
      for (const View* m : groups[i])
        for (const std::string& label : m->variants)  // a variant's reference and kernel views: named once
          if (std::find(v.variants.begin(), v.variants.end(), label) == v.variants.end()) v.variants.push_back(label);
      v.note += fmt::format(" Drawn once: {} show identical data here.", fmt::join(v.variants, ", "));
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace attnlab::views
