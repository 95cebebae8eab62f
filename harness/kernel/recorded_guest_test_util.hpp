#pragma once
// Tests only: a guest console recorded from a real kernel (its "@@" lines, in a testdata folder)
// and the .case files it loaded, in load order, with the mask facts of that boot.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/case/case_file.hpp"
#include "harness/kernel/guest_output.hpp"
#include "harness/kernel/xlated_compare.hpp"

namespace patchfuzz::kernel {

struct RecordedGuest {
    GuestReport report;
    std::vector<harness::Case> cases;
    MaskFacts facts;
};

inline RecordedGuest read_recorded_guest(const std::string& console_path, const std::vector<std::string>& case_paths) {
    RecordedGuest rec;
    std::ifstream f(console_path);
    std::stringstream ss;
    ss << f.rdbuf();
    auto rep = parse_guest_output(ss.str());
    EXPECT_TRUE(static_cast<bool>(rep)) << console_path;
    if (rep) rec.report = *rep;
    for (const auto& path : case_paths) {
        auto c = harness::read_case(path);
        EXPECT_TRUE(static_cast<bool>(c)) << path;
        if (c) rec.cases.push_back(*c);
    }
    rec.facts = mask_facts(rec.report.facts, rec.report.release);
    return rec;
}

}  // namespace patchfuzz::kernel
