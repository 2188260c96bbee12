//! The profiles against real heads as each hop delivers them.
