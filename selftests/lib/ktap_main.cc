// SPDX-License-Identifier: GPL-2.0
/*
 * main() for every selftest binary: GoogleTest with its output turned into
 * KTAP (one "ok"/"not ok" line per test, "# SKIP reason" for skips, the
 * failure messages as "#" diagnostics), and the kselftest exit codes:
 * 0 all passed, 1 a test failed, 4 every test skipped.
 *
 * A test that called EXTENSION() (lib/test_class.h) gets the diagnostic
 * "# extension: <why>" right before its result line (after its failure
 * messages); the program ends with "# conformance P/N, extensions Q/M":
 * tests passed/run of each class, skipped tests in neither.
 */
#include <gtest/gtest.h>
#include <stdio.h>
#include <string.h>

#include <sstream>
#include <string>

#include "test_class.h"

namespace {

void diag(const std::string &text)
{
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line))
		printf("# %s\n", line.c_str());
}

class KtapPrinter : public testing::EmptyTestEventListener {
public:
	void OnTestProgramStart(const testing::UnitTest &u) override
	{
		printf("KTAP version 1\n1..%d\n", u.test_to_run_count());
		fflush(stdout);
	}
	void OnTestPartResult(const testing::TestPartResult &r) override
	{
		if (r.failed())
			diag(std::string(r.file_name() ? r.file_name() : "?") +
			     ":" + std::to_string(r.line_number()) + ": " +
			     r.message());
	}
	void OnTestEnd(const testing::TestInfo &t) override
	{
		const testing::TestResult *r = t.result();
		std::string name =
			std::string(t.test_suite_name()) + "." + t.name();
		n_++;
		const char *why_ext = nullptr;
		for (int i = 0; i < r->test_property_count(); i++)
			if (!strcmp(r->GetTestProperty(i).key(),
				    test_class::kExtensionKey))
				why_ext = r->GetTestProperty(i).value();
		if (why_ext)
			diag(std::string("extension: ") + why_ext);
		if (!r->Skipped()) {
			Count &c = why_ext ? ext_ : conf_;
			c.run++;
			c.passed += !r->Failed();
		}
		if (r->Skipped()) {
			std::string why = "skipped";
			for (int i = 0; i < r->total_part_count(); i++)
				if (r->GetTestPartResult(i).skipped())
					why = r->GetTestPartResult(i).message();
			/* KTAP wants the reason on one line. */
			for (char &c : why)
				if (c == '\n')
					c = ' ';
			printf("ok %d %s # SKIP %s\n", n_, name.c_str(),
			       why.c_str());
		} else {
			printf("%s %d %s\n", r->Failed() ? "not ok" : "ok", n_,
			       name.c_str());
		}
		fflush(stdout);
	}
	void OnTestProgramEnd(const testing::UnitTest &) override
	{
		printf("# conformance %d/%d, extensions %d/%d\n", conf_.passed,
		       conf_.run, ext_.passed, ext_.run);
		fflush(stdout);
	}

private:
	struct Count {
		int passed = 0, run = 0;
	};
	int n_ = 0;
	Count conf_, ext_;
};

} // namespace

int main(int argc, char **argv)
{
	testing::InitGoogleTest(&argc, argv);
	testing::TestEventListeners &l =
		testing::UnitTest::GetInstance()->listeners();
	delete l.Release(l.default_result_printer());
	l.Append(new KtapPrinter);
	int rc = RUN_ALL_TESTS();
	const testing::UnitTest *u = testing::UnitTest::GetInstance();
	if (rc)
		return 1;
	if (u->test_to_run_count() > 0 &&
	    u->skipped_test_count() == u->test_to_run_count())
		return 4;
	return 0;
}
