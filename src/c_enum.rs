//! `c_enum!`: an enum the C ABI shares, declared once.
//!
//! rustls-ffi makes each C enum from its Rust enum with one macro; here the
//! macro takes the variants with their numbers, their names (the words
//! nginx logs and metrics label) and their docs, and writes the enum, its
//! conversions (number, name, dense index) and the C declaration that
//! `tests/c_header.rs` puts into `include/edgeguard.h` (cbindgen does not
//! expand macros, so the header's text comes from here). Adding a variant
//! is one edit: the tests and the header follow from the list.

/// Declares a C-numbered enum: `enum Name as "c_name" { Variant = 0 => "word", ... }`.
/// The numbers must be dense from 0 (the index of tables of counts is the
/// number; `numbers_are_dense` tests check it).
macro_rules! c_enum {
    (
        $(#[doc = $doc:literal])*
        $vis:vis enum $name:ident as $c_name:literal {
            $(
                $(#[doc = $vdoc:literal])*
                $variant:ident = $num:literal => $word:literal,
            )+
        }
    ) => {
        $(#[doc = $doc])*
        // A C enum's size (an `int`): the boundary's structs hold them.
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $(
                $(#[doc = $vdoc])*
                $variant = $num,
            )+
        }

        const _: () = assert!(
            std::mem::size_of::<$name>() == std::mem::size_of::<std::ffi::c_int>()
        );

        impl $name {
            /// Every variant, in number order.
            pub const ALL: [$name; [$($num),+].len()] = [$($name::$variant),+];

            /// The C type's name in `include/edgeguard.h`.
            pub const C_TYPE: &'static str = $c_name;

            /// The variant's word: what nginx logs and metrics label.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// [`Self::as_str`], NUL-terminated (for the C ABI).
            pub fn c_name(self) -> &'static std::ffi::CStr {
                match self {
                    $($name::$variant => {
                        const C: &std::ffi::CStr =
                            match std::ffi::CStr::from_bytes_with_nul(concat!($word, "\0").as_bytes()) {
                                Ok(c) => c,
                                Err(_) => panic!("a word with a NUL"),
                            };
                        C
                    })+
                }
            }

            /// The variant of a C number, if it is one.
            pub fn from_int(n: std::ffi::c_int) -> Option<$name> {
                match n {
                    $($num => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The variant named `word`, if one is.
            pub fn from_name(word: &[u8]) -> Option<$name> {
                Self::ALL.into_iter().find(|v| v.as_str().as_bytes() == word)
            }

            /// A dense index (the C number), for tables of counts.
            pub fn index(self) -> usize {
                self as usize
            }

            /// The C declaration of the enum, with its docs, as
            /// `include/edgeguard.h` holds it (`EDGEGUARD_OUTCOME_PASS = 0`).
            pub fn c_declaration() -> String {
                let mut out = String::from("/*\n");
                $(out.push_str($doc); out.push('\n');)*
                out.push_str(" */\ntypedef enum {\n");
                $(
                    out.push_str("  /*\n");
                    $(out.push_str("  "); out.push_str($vdoc); out.push('\n');)*
                    out.push_str(&format!(
                        "   */\n  {}_{} = {},\n",
                        $c_name.to_ascii_uppercase(),
                        $word.to_ascii_uppercase(),
                        $num
                    ));
                )+
                out.push_str(&format!("}} {};\n", $c_name));
                out
            }
        }
    };
}
