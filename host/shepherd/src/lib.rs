//! GOAT's turn loop, AppToolRouter and permission gate (being written).
