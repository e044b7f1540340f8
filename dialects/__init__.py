"""fuser.dialects"""
