//! exports.resolve(i, slowMs): matches specifier SPECS[i % n] against the
//! import-map patterns and returns how many match. With slowMs > 0 it first
//! waits that long (a blocking lookup), so that one call lasts slowMs.
use regex::Regex;
use std::ffi::c_void;
use std::ptr;
use std::sync::OnceLock;
use std::time::Duration;

type Env = *mut c_void;
type Value = *mut c_void;
type Info = *mut c_void;
type Callback = unsafe extern "C" fn(Env, Info) -> Value;

extern "C" {
    fn napi_get_cb_info(env: Env, info: Info, argc: *mut usize, argv: *mut Value, this: *mut Value,
                        data: *mut *mut c_void) -> i32;
    fn napi_get_value_uint32(env: Env, v: Value, out: *mut u32) -> i32;
    fn napi_create_uint32(env: Env, v: u32, out: *mut Value) -> i32;
    fn napi_create_function(env: Env, name: *const u8, len: usize, cb: Callback, data: *mut c_void,
                            out: *mut Value) -> i32;
    fn napi_set_named_property(env: Env, obj: Value, name: *const u8, v: Value) -> i32;
}

const PATTERNS: &[&str] = &[
    r"^@scope/[a-z-]+(/.*)?$",
    r"^lodash(/[a-z]+)*$",
    r"^\./lib/.*\.m?js$",
    r"^react(-dom)?(/.*)?$",
    r"^node:[a-z_/]+$",
    r"^[a-z0-9-]+/package\.json$",
];

const SPECS: &[&str] = &[
    "@scope/util/strings",
    "lodash/fp/map",
    "./lib/index.mjs",
    "react-dom/client",
    "node:fs/promises",
    "left-pad/package.json",
    "unknown-module",
];

fn patterns() -> &'static Vec<Regex> {
    static P: OnceLock<Vec<Regex>> = OnceLock::new();
    P.get_or_init(|| PATTERNS.iter().map(|p| Regex::new(p).unwrap()).collect())
}

#[inline(never)]
pub fn lookup_wait(ms: u32) {
    std::thread::sleep(Duration::from_millis(ms as u64));
}

#[inline(never)]
pub fn resolve(i: u32, slow_ms: u32) -> u32 {
    if slow_ms > 0 {
        lookup_wait(slow_ms);
    }
    let spec = SPECS[i as usize % SPECS.len()];
    patterns().iter().filter(|p| p.is_match(spec)).count() as u32
}

unsafe extern "C" fn js_resolve(env: Env, info: Info) -> Value {
    let mut argc = 2usize;
    let mut argv = [ptr::null_mut(); 2];
    let (mut i, mut slow) = (0u32, 0u32);
    let mut out = ptr::null_mut();
    napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut());
    napi_get_value_uint32(env, argv[0], &mut i);
    if argc > 1 {
        napi_get_value_uint32(env, argv[1], &mut slow);
    }
    napi_create_uint32(env, resolve(i, slow), &mut out);
    out
}

#[no_mangle]
pub unsafe extern "C" fn napi_register_module_v1(env: Env, exports: Value) -> Value {
    let mut f = ptr::null_mut();
    napi_create_function(env, b"resolve\0".as_ptr(), 7, js_resolve, ptr::null_mut(), &mut f);
    napi_set_named_property(env, exports, b"resolve\0".as_ptr(), f);
    exports
}
