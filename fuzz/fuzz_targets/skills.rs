//! Skills (SEP-2640): `skills/list` results, and `SKILL.md` files checked against their
//! listing (frontmatter, size, digest). See `kaged_mcp_fuzz::skills`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::skills::skills(data));
